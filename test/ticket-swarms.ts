// Trackers for the ticket office's tests (tracker/tickets/*.test.ts): stories260K packed once per suite, and per test
// a tracker with the model published and one protocol-level host serving all of it.
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, beforeAll } from 'vitest'
import { connectTracker } from '../dataplane/tracker-connection'
import { packModel } from '../gguf/pack'
import { tokenizerGguf } from '../gguf/tokenizer'
import { NodeIdentity } from '../identity/keys'
import {
  ClientToTracker,
  callRpc,
  HostToTracker,
  type Manifest,
  type Receipt,
  type ReceiptBody,
  receiptMessage,
  stepMessage,
} from '../protocol'
import { Tracker, type TrackerOptions } from '../tracker/server'
import { STORIES_260K, scratchDir } from './models'
import { readyState, TEST_PROFILE } from './peers'
import { createModelTorrent } from './programs'
import type { StoreEngine } from './store-engines'

/** A receipt as a host hands it in: the client's signature of the step embedded, then the host's of the whole. */
export function signedBoth(body: Omit<ReceiptBody, 'client'>, client: NodeIdentity, host: NodeIdentity): Receipt {
  const withClient: ReceiptBody = { ...body, client: client.sign(stepMessage(body)) }
  return { ...withClient, signature: host.sign(receiptMessage(withClient)) }
}

/** A fresh session id: every route.plan names the session it pays for. */
export const sid = (): string => randomBytes(16).toString('hex')

/**
 * For the describe block it is called in: the model packed in a scratch folder before its tests (beforeAll) and the
 * folder removed after them; the returned function gives the swarms once packed.
 */
export function packedPerSuite(engine: StoreEngine): () => TicketSwarms {
  let packed: TicketSwarms | undefined
  let cleanup: () => Promise<void> = async () => {}
  beforeAll(async () => {
    const scratch = await scratchDir()
    cleanup = scratch.cleanup
    packed = await TicketSwarms.pack(engine, scratch.dir)
  })
  afterAll(() => cleanup())
  return () => {
    if (packed === undefined) throw new Error('the swarms are packed in beforeAll: use them inside a test')
    return packed
  }
}

/** The model packed in `dir`, and each named tracker's database on `engine` (a restart opens the same one). */
export class TicketSwarms {
  private readonly databases = new Map<string, string>()

  private constructor(
    private readonly engine: StoreEngine,
    readonly dir: string,
    readonly manifest: Manifest,
    private readonly files: { torrent: Buffer; tokenizer: Buffer },
  ) {}

  static async pack(engine: StoreEngine, dir: string): Promise<TicketSwarms> {
    const manifest = await packModel({ source: STORIES_260K, out: join(dir, 'stories'), blocksPerArtifact: 2 })
    const files = {
      torrent: await createModelTorrent(join(dir, 'stories'), manifest, []),
      tokenizer: await tokenizerGguf(join(dir, 'stories', 'head.gguf')),
    }
    return new TicketSwarms(engine, dir, manifest, files)
  }

  async database(name: string): Promise<string> {
    let location = this.databases.get(name)
    if (location === undefined) {
      location = (await this.engine.fresh()).location
      this.databases.set(name, location)
    }
    return location
  }

  /** A tracker with the model published and one (protocol-level) host serving all of it. */
  async start(name: string, options: Partial<TrackerOptions> = {}, hostKey = NodeIdentity.generate()) {
    const { manifest, dir } = this
    const tracker = await Tracker.start({
      dbPath: await this.database(name),
      keyPath: join(dir, `${name}.pem`),
      ...options,
    })
    const publisher = await connectTracker(tracker.url, '/clients', NodeIdentity.generate())
    await callRpc(publisher, ClientToTracker, 'model.publish', { manifest, ...this.files })
    publisher.close()
    const host = await connectTracker(tracker.url, '/hosts', hostKey)
    const hello = await callRpc(host, HostToTracker, 'host.hello', {
      profile: TEST_PROFILE,
      state: readyState(manifest.modelId, [0, manifest.nLayer]),
    })
    const clients: { close(): void }[] = [host]
    const client = async (identity = NodeIdentity.generate()) => {
      const socket = await connectTracker(tracker.url, '/clients', identity)
      clients.push(socket)
      return socket
    }
    const close = async () => {
      for (const c of clients) c.close()
      await tracker.close()
    }
    return { tracker, hello, client, close }
  }
}
