import { readdir, readFile, unlink } from 'node:fs/promises'
import { join } from 'node:path'
import { SerialQueue } from '../../../host/serial-queue'
import { syncDir } from '../../../identity/keys'
import { Conversation, MAX_CONVERSATIONS, NeuronError } from '../../../protocol'
import { keepAside, parseJsonFile, writeFileDurably } from '../durable-file'
import { SystemPromptStore } from '../system-prompts'
import type { GroupHandlers } from './registry'

/** Where conversations live in the data dir: one `<id>.json` each. */
export const CONVERSATIONS_DIR = 'conversations'
const FILE = /^([A-Za-z0-9_-]{1,64})\.json$/

/**
 * The chat screen's conversations, kept by the backend in the data dir so they outlive the renderer
 * (a browser's storage is per origin, and browser mode's port changes every run). Files are written
 * durably (writeFileDurably), one change at a time. The system prompts kept by name (presets) are the chat's too.
 */
export class ConversationsController {
  readonly handlers: GroupHandlers<'conversations'> = {
    'conversations.list': () => this.changes.run(() => this.list()),
    'conversations.save': ({ conversation }) => this.changes.run(() => this.save(conversation)),
    'conversations.delete': ({ id }) => this.changes.run(() => this.remove(id)),
    'conversations.presets': () => this.changes.run(async () => ({ presets: await this.presets.list() })),
    'conversations.savePreset': ({ preset }) =>
      this.changes.run(async () => ({ presets: await this.presets.save(preset) })),
    'conversations.deletePreset': ({ name }) =>
      this.changes.run(async () => ({ presets: await this.presets.remove(name) })),
  }
  private readonly changes = new SerialQueue()
  private readonly dir: string
  /** The system prompts kept by name, to start a chat with. */
  private readonly presets: SystemPromptStore

  constructor(
    dataDir: string,
    private readonly log: (line: string) => void,
  ) {
    this.dir = join(dataDir, CONVERSATIONS_DIR)
    this.presets = new SystemPromptStore(dataDir, log)
  }

  /** Every conversation, most recent first; a file that cannot be read is kept aside and named in `unreadable`. */
  private async list(): Promise<{ conversations: Conversation[]; unreadable: string[] }> {
    const conversations: Conversation[] = []
    const unreadable: string[] = []
    for (const name of await this.files()) {
      const path = join(this.dir, name)
      const read = await this.read(path, name).catch((error: Error) => ({
        problem: `${path} could not be read (${error.message})`,
      }))
      if ('value' in read) {
        conversations.push(read.value)
        continue
      }
      const aside = await keepAside(path)
      const line = `${read.problem}; it was kept as ${aside} and left out of the chat list`
      this.log(line)
      unreadable.push(line)
    }
    return { conversations: conversations.sort((a, b) => b.updatedAt - a.updatedAt), unreadable }
  }

  private async read(path: string, name: string): Promise<{ value: Conversation } | { problem: string }> {
    const read = parseJsonFile(path, await readFile(path, 'utf8'), Conversation)
    if ('value' in read && `${read.value.id}.json` !== name)
      return { problem: `${path} holds conversation ${read.value.id}, not the one its name says` }
    return read
  }

  private async save(conversation: Conversation): Promise<Record<string, never>> {
    const name = `${conversation.id}.json`
    const files = await this.files()
    if (!files.includes(name) && files.length >= MAX_CONVERSATIONS) {
      throw new NeuronError(
        'too_many_conversations',
        `${MAX_CONVERSATIONS} conversations are kept already; delete old ones to keep "${conversation.title}"`,
      )
    }
    await writeFileDurably(join(this.dir, name), JSON.stringify(conversation))
    return {}
  }

  private async remove(id: string): Promise<Record<string, never>> {
    try {
      await unlink(join(this.dir, `${id}.json`))
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {}
      throw error
    }
    await syncDir(this.dir)
    return {}
  }

  /** The conversation files (not temp or kept-aside ones); none before the first save. */
  private async files(): Promise<string[]> {
    const names = await readdir(this.dir).catch((error: NodeJS.ErrnoException) => {
      if (error.code === 'ENOENT') return []
      throw error
    })
    return names.filter((name) => FILE.test(name))
  }
}
