import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { z } from 'zod'
import { SerialQueue } from '../../host/serial-queue'
import { ApiKeyHint, AppApi, Limits, MAX_ALLOWED_KEYS, PairedApp, PublicKey } from '../../protocol'
import { keepAside, parseJsonFile, writeFileDurably } from './durable-file'

/**
 * A saved hosting choice is what hosting.start accepts (the same
 * model id and block range schemas), plus whether it was paused.
 */
export const SavedHosting = AppApi['hosting.start'].request.extend({ paused: z.boolean() })

const Port = z.number().int().min(1).max(65535)

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
  /** Remote trackers (base URLs) the user agreed to chat on, knowing their hosts see prompts and answers. */
  consentedTrackers: z.array(z.string().url()).default([]),
  /** The embedded swarm's allow-list (this app's own key is always admitted too); null: anyone who can reach it. */
  allowedKeys: z.array(PublicKey).max(MAX_ALLOWED_KEYS).nullable().default(null),
  /** The embedded swarm is open to the home network: it listens on every interface and is advertised by mDNS. */
  lanOpen: z.boolean().default(false),
  /** Apps paired on the home network: asked (this app admitted their key) or asking (this app joined theirs). */
  pairedApps: z.array(PairedApp).max(1000).default([]),
  /**
   * The browser mode's port, kept so open tabs and bookmarks find the app again after a restart; null: none chosen yet.
   */
  uiPort: Port.nullable().default(null),
  /**
   * The embedded tracker's port, kept so the OpenAI-compatible API
   * and hosts' links keep their address; null: none chosen yet.
   */
  trackerPort: Port.nullable().default(null),
  /**
   * The hosting choice left on each tracker the app switched away
   * from (base URL, or "embedded"): switching back resumes it.
   */
  hostingByTracker: z.record(z.string(), SavedHosting).default({}),
  /**
   * The API key last made for the app's account on the embedded tracker,
   * masked (the key itself is shown once, never kept); null: none.
   */
  apiKey: ApiKeyHint.extend({ accountId: z.string().min(1) })
    .nullable()
    .default(null),
})
export type SavedSettings = z.infer<typeof SavedSettings>
export type SavedHosting = z.infer<typeof SavedHosting>

export const SETTINGS_FILE = 'settings.json'

/**
 * `<dataDir>/settings.json`, parsed with zod; each change is written durably (writeFileDurably), one
 * at a time over the one before, so concurrent changes all land.
 */
export class SettingsStore {
  private readonly writes = new SerialQueue()

  private constructor(
    readonly path: string,
    private current: SavedSettings,
    /** Set when the file could not be read at open: where it was kept, and that the defaults are in force. */
    readonly notice: string | null = null,
  ) {}

  /** An unreadable file is kept aside (keepAside) and the defaults load, with a notice saying so. */
  static async open(dataDir: string): Promise<SettingsStore> {
    const path = join(dataDir, SETTINGS_FILE)
    let text: string
    try {
      text = await readFile(path, 'utf8')
    } catch {
      return new SettingsStore(path, SavedSettings.parse({}))
    }
    const parsed = parseJsonFile(path, text, SavedSettings)
    if ('value' in parsed) return new SettingsStore(path, parsed.value)
    const aside = await keepAside(path)
    const notice =
      `${parsed.problem}. It was kept as ${aside} and the app started with the default settings: set ` +
      `the tracker and limits again, or copy them from that file.`
    return new SettingsStore(path, SavedSettings.parse({}), notice)
  }

  get value(): SavedSettings {
    return this.current
  }

  /**
   * Applies `change` over the settings as the changes queued before it left them; on a failed write nothing changes.
   */
  update(change: Partial<SavedSettings>): Promise<SavedSettings> {
    return this.writes.run(async () => {
      const next = SavedSettings.parse({ ...this.current, ...change })
      await writeFileDurably(this.path, `${JSON.stringify(next, null, 2)}\n`)
      this.current = next
      return next
    })
  }
}
