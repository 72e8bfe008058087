import { chmod, mkdir, readFile, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { z } from 'zod'
import { AppApi, describeIssues, Limits, NeuronError } from '../../protocol'

/** A saved hosting choice is what hosting.start accepts (the same model id and block range schemas), plus whether it was paused. */
const SavedHosting = AppApi['hosting.start'].request.extend({ paused: z.boolean() })

/** What the app remembers between runs: the user's choices, not what it measured. */
export const SavedSettings = z.object({
  /** null: the embedded default swarm. */
  trackerUrl: z.string().url().nullable().default(null),
  /** Where the next start keeps its data (a change applies then); absent: where this file lives. */
  dataDir: z.string().min(1).nullable().default(null),
  /** Absent fields take the computer's defaults. */
  limits: Limits.partial().default({}),
  /** GGUFs added with models.add: this app publishes and seeds them again at every start. */
  addedModels: z.array(z.string()).default([]),
  /** The range this computer serves, so a restart resumes it (paused: stays paused). */
  hosting: SavedHosting.nullable().default(null),
})
export type SavedSettings = z.infer<typeof SavedSettings>

export const SETTINGS_FILE = 'settings.json'

/** `<dataDir>/settings.json`, parsed with zod; written atomically (temp file + rename). */
export class SettingsStore {
  private constructor(
    readonly path: string,
    private current: SavedSettings,
  ) {}

  static async open(dataDir: string): Promise<SettingsStore> {
    const path = join(dataDir, SETTINGS_FILE)
    let text: string
    try {
      text = await readFile(path, 'utf8')
    } catch {
      return new SettingsStore(path, SavedSettings.parse({}))
    }
    let raw: unknown
    try {
      raw = JSON.parse(text)
    } catch (error) {
      throw new NeuronError(
        'bad_settings',
        `${path} is not JSON (${error instanceof Error ? error.message : error}); fix it by hand, or delete it to start from the defaults.`,
        { path },
      )
    }
    const parsed = SavedSettings.safeParse(raw)
    if (!parsed.success) {
      throw new NeuronError('bad_settings', `${describeIssues(path, parsed.error)}; fix it by hand, or delete it to start from the defaults.`, { path })
    }
    return new SettingsStore(path, parsed.data)
  }

  get value(): SavedSettings {
    return this.current
  }

  async update(change: Partial<SavedSettings>): Promise<SavedSettings> {
    const next = SavedSettings.parse({ ...this.current, ...change })
    const dir = join(this.path, '..')
    await mkdir(dir, { recursive: true })
    const temp = `${this.path}.${process.pid}.tmp`
    await writeFile(temp, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o600 })
    await chmod(temp, 0o600)
    await rename(temp, this.path)
    this.current = next
    return next
  }
}
