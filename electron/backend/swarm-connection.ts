import { join } from 'node:path'
import { SwarmClient } from '../../client/swarm-client'
import { trackerBase } from '../../dataplane/tracker-connection'
import type { NodeIdentity } from '../../identity/keys'
import { AuthChallenge, MICRO, NeuronError } from '../../protocol'
import { Tracker } from '../../tracker/server'
import { onPreferredPort } from './fixed-address'
import { ModelPublisher } from './model-publisher'

export interface SwarmConnectionOptions {
  readonly dataDir: string
  /** null: start the embedded tracker in this process. */
  readonly trackerUrl: string | null
  readonly identity: NodeIdentity
  /** GGUFs the embedded tracker publishes at start. */
  readonly defaultModels: readonly string[]
  /** GGUFs the user added: published again on any tracker; one that fails is logged and skipped. */
  readonly addedModels?: readonly string[]
  /** The embedded tracker's allow-list (Settings); null or absent: anyone who can reach it. */
  readonly allowedKeys?: readonly string[] | null
  /** The embedded tracker's port as saved (null: a free one); taken by another program, another is used and said. */
  readonly trackerPort?: number | null
  /** The embedded tracker listens on every interface (the home network), not only on loopback. */
  readonly lanOpen?: boolean
  readonly log: (line: string) => void
}

/**
 * The app's link to one swarm: a SwarmClient on a remote tracker, or on a private tracker this
 * process runs (embedded default: sqlite in the data dir, the default models published and seeded
 * here, and a consumer account for the app's key so its chats pay the hosts).
 */
export class SwarmConnection {
  private constructor(
    private current: SwarmClient,
    readonly trackerUrl: string,
    readonly embedded: Tracker | null,
    readonly publisher: ModelPublisher,
    private readonly identity: NodeIdentity,
    private readonly log: (line: string) => void,
  ) {}

  get client(): SwarmClient {
    return this.current
  }

  static async open(options: SwarmConnectionOptions): Promise<SwarmConnection> {
    const { log } = options
    const publisher = new ModelPublisher(options.dataDir, log)
    let embedded: Tracker | null = null
    try {
      if (options.trackerUrl === null) {
        // Loopback only unless opened to the home network: then
        // admitted are the allow-list's keys alone (admittedKeys).
        const allowedKeys = embeddedAllowList(options.allowedKeys ?? null, options.identity)
        const start = (port: number) =>
          Tracker.start({
            dbPath: join(options.dataDir, 'tracker.sqlite'),
            host: options.lanOpen === true ? '0.0.0.0' : '127.0.0.1',
            port,
            newKeyGrantMicro: 10 * MICRO,
            ...(allowedKeys === null ? {} : { allowedKeys }),
          })
        embedded = await onPreferredPort(options.trackerPort ?? null, 'the embedded tracker', start, log)
        // A default model that fails to publish is left out, with a line saying why; the user adds a GGUF then.
        for (const model of options.defaultModels) {
          await publisher
            .publish(model, localUrl(embedded), options.identity)
            .catch((e: Error) =>
              log(`not publishing the default model ${model} (${e.message}); add a GGUF under Host a model`),
            )
        }
        await ensureAccount(embedded, options.identity)
      } else {
        await probeTracker(options.trackerUrl)
      }
      const url = embedded === null ? trackerBase(options.trackerUrl as string) : localUrl(embedded)
      for (const model of options.addedModels ?? []) {
        await publisher
          .publish(model, url, options.identity)
          .catch((e: Error) => log(`not seeding ${model}: ${e.message}`))
      }
      // The account exists before the client connects: the tracker joins it to its account's pushes then.
      const client = await SwarmClient.connect(url, options.identity, (l) => log(`client: ${l}`))
      log(`tracker ${url}`)
      return new SwarmConnection(client, url, embedded, publisher, options.identity, log)
    } catch (error) {
      await publisher.close()
      await embedded?.close()
      throw error
    }
  }

  /** Replaces a client that lost the tracker (the seeds carry on). */
  async reconnectClient(): Promise<SwarmClient> {
    const fresh = await SwarmClient.connect(this.trackerUrl, this.identity, (l) => this.log(`client: ${l}`))
    // The old client's session.end calls are acknowledged, or not, on its own time.
    void this.current.close()
    this.current = fresh
    return fresh
  }

  /** Packs and publishes a GGUF on this swarm; this app seeds it. */
  publish(source: string): Promise<string> {
    return this.publisher.publish(source, this.trackerUrl, this.identity)
  }

  /** The app's consumer balance on the embedded tracker; undefined on a remote one (it is learnt from pushes). */
  async accountBalance(publicKey: string): Promise<{ accountId: string; balanceMicro: number } | null | undefined> {
    if (this.embedded === null) return undefined
    const account = await this.embedded.accounts.byPublicKey(publicKey)
    return account === undefined
      ? null
      : { accountId: account.accountId, balanceMicro: await this.embedded.accounts.balance(account.accountId) }
  }

  async close(): Promise<void> {
    await this.current.close()
    await this.publisher.close()
    await this.embedded?.close()
  }
}

/**
 * The embedded tracker as this app reaches it: on loopback, also when
 * it listens on every interface (0.0.0.0 is no address to dial).
 */
function localUrl(tracker: Tracker): string {
  return tracker.url.replace('//0.0.0.0:', '//127.0.0.1:')
}

/** The embedded tracker's allow-list: the user's keys and this app's own (it never locks itself out); null: open. */
export function embeddedAllowList(keys: readonly string[] | null, identity: NodeIdentity): string[] | null {
  return keys === null ? null : [...new Set([...keys, identity.publicKey])]
}

/** The embedded tracker pays chats from the app's own account, granted the tracker's default. */
async function ensureAccount(tracker: Tracker, identity: NodeIdentity): Promise<void> {
  if ((await tracker.accounts.byPublicKey(identity.publicKey)) === undefined)
    await tracker.accounts.create({ publicKey: identity.publicKey, name: 'this app' })
}

/**
 * Checks that a Neuron tracker answers at `url` (its challenge endpoint, within `timeoutMs`), or
 * throws tracker_unreachable saying why.
 */
export async function probeTracker(url: string, timeoutMs = 3000): Promise<void> {
  const base = trackerBase(url)
  let reason: string
  try {
    const res = await fetch(`${base}/auth/challenge`, { signal: AbortSignal.timeout(timeoutMs) })
    if (res.ok && AuthChallenge.safeParse(await res.json().catch(() => null)).success) return
    reason = res.ok ? 'it answered, but not like a Neuron tracker' : `HTTP ${res.status}`
  } catch (error) {
    const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : undefined
    reason =
      error instanceof Error && error.name === 'TimeoutError'
        ? `no answer within ${timeoutMs / 1000} s`
        : (cause ?? String(error))
  }
  throw new NeuronError(
    'tracker_unreachable',
    `no Neuron tracker answers at ${base} (${reason}); check the address, or leave it empty for the embedded swarm`,
    { trackerUrl: base },
  )
}
