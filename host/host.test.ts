import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { SwarmClient } from '../client/swarm-client'
import { packModel } from '../gguf/pack'
import { NodeIdentity } from '../identity/keys'
import { ClientToTracker, callRpc, decodeFrame, jsonFrame, type Manifest, type RpcSocket, readJson } from '../protocol'
import { STORIES_260K, scratchDir } from '../test/models'
import { Tracker } from '../test/programs'
import { Host } from './host'
import { type Publication, publishModel } from './publish'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let tracker: Tracker
let publication: Publication
let manifest: Manifest
let client: SwarmClient

async function complete(maxTokens = 24): Promise<{ text: string; hops: number }> {
  const run = client.generate({ modelId: manifest.modelId, prompt: 'Once upon a time', maxTokens })
  let text = ''
  let next = await run.next()
  while (!next.done) {
    text += next.value.text
    next = await run.next()
  }
  return { text, hops: next.value.route.length }
}

describe(`hosts joining a tracker in-process`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
    tracker = await Tracker.start({
      dbPath: join(dir, 'tracker.sqlite'),
      heartbeatMs: 300,
      newKeyGrantMicro: 10_000_000,
    })
    await packModel({ source: STORIES_260K, out: join(dir, 'packed'), blocksPerArtifact: 2 })
    publication = await publishModel(join(dir, 'packed'), tracker.url, NodeIdentity.generate(), join(dir, 'publisher'))
    manifest = publication.manifest
    // the tracker's relay under test: no channel punched around it (test/punched-path.test.ts)
    client = await SwarmClient.connect(tracker.url, NodeIdentity.generate(), () => {}, { punch: false })
  })
  afterAll(async () => {
    client?.close()
    await publication?.close()
    await tracker?.close()
    await cleanup()
  })

  it('a host that accepts no connections serves through the tracker relay, with the same text', async () => {
    const direct = new Host({
      trackerUrl: tracker.url,
      dataDir: join(dir, 'direct'),
      modelId: manifest.modelId,
      blocks: [0, 5],
      threads: 1,
    })
    await direct.start()
    const viaDirect = await complete()
    await direct.stop(1000)

    const relayed = new Host({
      trackerUrl: tracker.url,
      dataDir: join(dir, 'relayed'),
      modelId: manifest.modelId,
      blocks: [0, 5],
      threads: 1,
      relay: true,
    })
    await relayed.start()
    try {
      expect(relayed.state.endpoint).toBeNull()
      const viaRelay = await complete()
      expect(viaRelay.text).toBe(viaDirect.text)
      expect(viaRelay.text).toMatch(/^, there was a little girl named Lily/)

      // Another client that learns the session id cannot close it
      // through the relay: the host knows who the tracker relays for.
      const session = randomBytes(16).toString('hex')
      const run = client.generate({ modelId: manifest.modelId, prompt: 'Once upon a time', maxTokens: 6, session })
      await run.next()
      const intruder = await SwarmClient.connect(tracker.url, NodeIdentity.generate())
      try {
        const close = jsonFrame('close', session, 0, {})
        const { frame } = await callRpc(intruder.tracker, ClientToTracker, 'relay.forward', {
          hostId: relayed.hostId,
          frame: close,
        })
        expect(readJson(decodeFrame(frame), z.object({ code: z.string() }))).toEqual({ code: 'not_your_session' })
      } finally {
        intruder.close()
      }
      let tokens = 1
      for (let next = await run.next(); !next.done; next = await run.next()) tokens++
      expect(tokens).toBe(6)
    } finally {
      await relayed.stop(1000)
    }
  })

  it('routes through part of a host’s span when hosts overlap, with the same text', async () => {
    const reference = new Host({
      trackerUrl: tracker.url,
      dataDir: join(dir, 'whole'),
      modelId: manifest.modelId,
      blocks: [0, 5],
      threads: 1,
    })
    await reference.start()
    const whole = await complete()
    await reference.stop(1000)

    const a = new Host({
      trackerUrl: tracker.url,
      dataDir: join(dir, 'overlap-a'),
      modelId: manifest.modelId,
      blocks: [0, 3],
      threads: 1,
    })
    const b = new Host({
      trackerUrl: tracker.url,
      dataDir: join(dir, 'overlap-b'),
      modelId: manifest.modelId,
      blocks: [2, 5],
      threads: 1,
    })
    await a.start()
    await b.start()
    try {
      const route = await callRpc(client.tracker, ClientToTracker, 'route.plan', {
        modelId: manifest.modelId,
        maxTokens: 64,
        session: randomBytes(16).toString('hex'),
      })
      // Whichever host takes block 2, one of them serves only part of its span.
      expect(route.hops.map((h) => h.blocks[1] - h.blocks[0]).reduce((x, y) => x + y, 0)).toBe(5)
      expect(route.hops).toHaveLength(2)
      expect((await complete()).text).toBe(whole.text)
    } finally {
      await a.stop(1000)
      await b.stop(1000)
    }
  })

  it('with --blocks auto a host takes the range the tracker proposes and serves it', async () => {
    const host = new Host({
      trackerUrl: tracker.url,
      dataDir: join(dir, 'auto'),
      modelId: manifest.modelId,
      blocks: 'auto',
      threads: 1,
    })
    await host.start()
    try {
      // Alone in the swarm, the bottleneck is every block: the proposal covers the whole model.
      expect(host.state.blocks).toEqual([0, 5])
      expect(host.state.status).toBe('ready')
      expect((await complete(8)).hops).toBe(1)
    } finally {
      await host.stop(1000)
    }
  })

  it('a draining host leaves routing at once and lets the session in flight finish', async () => {
    const host = new Host({
      trackerUrl: tracker.url,
      dataDir: join(dir, 'drain'),
      modelId: manifest.modelId,
      blocks: [0, 5],
      threads: 1,
    })
    await host.start()
    const run = client.generate({ modelId: manifest.modelId, prompt: 'Once upon a time', maxTokens: 40 })
    await run.next()
    const stopping = host.stop(10_000)
    // The tracker hears "draining" before the host waits for its sessions.
    await new Promise((r) => setTimeout(r, 100))
    await expect(
      callRpc(client.tracker, ClientToTracker, 'route.plan', {
        modelId: manifest.modelId,
        maxTokens: 10,
        session: randomBytes(16).toString('hex'),
      }),
    ).rejects.toMatchObject({
      code: 'no_route',
    })
    let tokens = 1
    let next = await run.next()
    while (!next.done) {
      tokens++
      next = await run.next()
    }
    expect(tokens).toBe(40)
    await stopping
  })

  it(
    'a host stopped while it downloads gives up at once: start rejects with "stopped" and the tracker sees ' +
      'it leave',
    async () => {
      // Published, then no longer seeded: a download of it never finishes.
      await packModel({
        source: STORIES_260K,
        out: join(dir, 'orphan-packed'),
        blocksPerArtifact: 2,
        modelId: 'orphan',
      })
      const orphan = await publishModel(
        join(dir, 'orphan-packed'),
        tracker.url,
        NodeIdentity.generate(),
        join(dir, 'orphan-publisher'),
      )
      await orphan.close()
      const host = new Host({
        trackerUrl: tracker.url,
        dataDir: join(dir, 'orphan-host'),
        modelId: 'orphan',
        blocks: [0, 5],
        threads: 1,
      })
      const downloading = new Promise<void>((resolve) =>
        host.on('state', (s) => s.status === 'downloading' && resolve()),
      )
      const outcome = host.start().then(
        () => 'ready',
        (e: { code?: string }) => e.code,
      )
      await downloading
      await new Promise((r) => setTimeout(r, 300))
      const stopping = performance.now()
      await host.stop(1000)
      expect(performance.now() - stopping).toBeLessThan(5000)
      expect(await outcome).toBe('stopped')
      for (let i = 0; i < 50 && tracker.registry.get(host.hostId)?.online === true; i++)
        await new Promise((r) => setTimeout(r, 100))
      expect(tracker.registry.get(host.hostId)?.online).toBe(false)
    },
  )

  it('a host stopped while it loads lets the load finish, then lets it go instead of serving', async () => {
    const host = new Host({
      trackerUrl: tracker.url,
      dataDir: join(dir, 'stop-loading'),
      modelId: manifest.modelId,
      blocks: [0, 5],
      threads: 1,
    })
    const states: string[] = []
    let stopping: Promise<void> | undefined
    host.on('state', (s) => {
      states.push(s.status)
      if (s.status === 'loading') stopping ??= host.stop(1000)
    })
    const outcome = host.start().then(
      () => 'ready',
      (e: { code?: string }) => e.code,
    )
    expect(await outcome).toBe('stopped')
    await stopping
    expect(states).not.toContain('ready')
    expect(host.activeSessions).toBe(0)
    expect(tracker.registry.get(host.hostId)?.state.status).not.toBe('ready')
  })

  it(
    'answers its tracker’s unknown events and malformed ' + 'relay frames with typed errors, and keeps serving',
    async () => {
      const host = new Host({
        trackerUrl: tracker.url,
        dataDir: join(dir, 'hostile-tracker'),
        modelId: manifest.modelId,
        blocks: [0, 5],
        threads: 1,
      })
      await host.start()
      try {
        // The tracker's end of the host's connection (a private field): what a hostile tracker could send down it.
        const toHost = (tracker as unknown as { hostSockets: Map<string, RpcSocket> }).hostSockets.get(host.hostId)
        if (toHost === undefined) throw new Error(`the tracker holds no socket for host ${host.hostId}`)
        expect(await toHost.timeout(2000).emitWithAck('no.such.event', { x: 1 })).toMatchObject({
          ok: false,
          error: { code: 'unknown_event' },
        })
        expect(await toHost.timeout(2000).emitWithAck('relay.frame', { frame: Buffer.from('xx') })).toMatchObject({
          ok: false,
          error: { code: 'bad_request' },
        })
        expect(await toHost.timeout(2000).emitWithAck('relay.frame', Buffer.alloc(64))).toMatchObject({
          ok: false,
          error: { code: 'bad_request' },
        })
        expect((await complete(8)).text).toMatch(/^, there was/)
      } finally {
        await host.stop(1000)
      }
    },
  )

  it('joins the tracker again after the tracker restarts, and serves as before', async () => {
    const host = new Host({
      trackerUrl: tracker.url,
      dataDir: join(dir, 'rejoin'),
      modelId: manifest.modelId,
      blocks: [0, 5],
      threads: 1,
    })
    await host.start()
    try {
      const { port } = tracker
      client.close()
      await tracker.close()
      tracker = await Tracker.start({
        dbPath: join(dir, 'tracker.sqlite'),
        port,
        heartbeatMs: 300,
        newKeyGrantMicro: 10_000_000,
      })
      client = await SwarmClient.connect(tracker.url, NodeIdentity.generate())
      // The restarted tracker knows the model from SQLite and the host from its new hello.
      for (let i = 0; i < 100 && tracker.registry.get(host.hostId)?.online !== true; i++)
        await new Promise((r) => setTimeout(r, 100))
      expect(tracker.registry.get(host.hostId)?.state.status).toBe('ready')
      expect((await complete(8)).text).toMatch(/^, there was/)
    } finally {
      await host.stop(1000)
    }
  })
})
