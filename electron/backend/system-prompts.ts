import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { z } from 'zod'
import { MAX_SYSTEM_PROMPT_PRESETS, NeuronError, type SystemPromptPreset, SystemPromptPresets } from '../../protocol'
import { keepAside, parseJsonFile, writeFileDurably } from './durable-file'

/** Where the chat's system prompt presets live in the data dir. */
export const SYSTEM_PROMPTS_FILE = 'system-prompts.json'
const File = z.object({ presets: SystemPromptPresets })

/**
 * The chat's system prompts kept by name, in one small file beside the conversations (they are the chat's, like
 * conversations, and outlive a browser's per-origin storage). Callers run one change at a time.
 */
export class SystemPromptStore {
  private readonly path: string

  constructor(
    dataDir: string,
    private readonly log: (line: string) => void,
  ) {
    this.path = join(dataDir, SYSTEM_PROMPTS_FILE)
  }

  /** The presets by name; none before the first is saved. A file that cannot be read is kept aside, and said. */
  async list(): Promise<SystemPromptPreset[]> {
    let text: string
    try {
      text = await readFile(this.path, 'utf8')
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return []
      throw error
    }
    const read = parseJsonFile(this.path, text, File)
    if ('value' in read) return read.value.presets
    const aside = await keepAside(this.path)
    this.log(`${read.problem}; the system prompt presets start empty, the file was kept as ${aside}`)
    return []
  }

  /** Keeps `preset` under its name, replacing one of that name. */
  async save(preset: SystemPromptPreset): Promise<SystemPromptPreset[]> {
    const others = (await this.list()).filter((p) => p.name !== preset.name)
    if (others.length >= MAX_SYSTEM_PROMPT_PRESETS)
      throw new NeuronError(
        'too_many_presets',
        `${MAX_SYSTEM_PROMPT_PRESETS} system prompts are kept already; delete one to keep "${preset.name}"`,
      )
    return this.write([...others, preset])
  }

  async remove(name: string): Promise<SystemPromptPreset[]> {
    const presets = await this.list()
    const left = presets.filter((p) => p.name !== name)
    return left.length === presets.length ? presets : this.write(left)
  }

  private async write(presets: SystemPromptPreset[]): Promise<SystemPromptPreset[]> {
    const sorted = presets.sort((a, b) => a.name.localeCompare(b.name))
    await writeFileDurably(this.path, JSON.stringify({ presets: sorted }))
    return sorted
  }
}
