// Issue 39, item 4: a host behind the tracker's relay is measured as its frames travel, through the relay, and the
// planner prices it by that round trip. Real tracker, real hosts (one direct, one that accepts no connections) and a
// real client on 127.0.0.1: the relayed host answers a ping frame through the relay with a pong of the same bytes; a
// client routed through it reports the relayed round trip from its session's link; a client routed around it measures
// it through the relay because the route asked (measureRelayed), and the tracker records both.
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { FramePinger, measureRelayed } from '../dataplane/link-latency'
import { packModel } from '../gguf/pack'
import { Host } from '../host/host'
import { type Publication, publishModel } from '../host/publish'
import { NodeIdentity } from '../identity/keys'
import { ClientToTracker, callRpc, decodeFrame, encodeFrame, NO_SESSION } from '../protocol'
import { STORIES_260K, scratchDir } from './models'
import { Tracker } from './programs'

describe('hosts behind the tracker relay, measured through it', () => {
  let scratch: { dir: string; cleanup: () => Promise<void> }
  let tracker: Tracker
  let publication: Publication
  const hosts: Host[] = []
  let direct: Host
  let relayed: Host

  beforeAll(async () => {
    scratch = await scratchDir('neuron-relayed-latency-')
    tracker = await Tracker.start({
      dbPath: join(scratch.dir, 'tracker.sqlite'),
      heartbeatMs: 300,
      newKeyGrantMicro: 10_000_000,
    })
    await packModel({ source: STORIES_260K, out: join(scratch.dir, 'packed'), blocksPerArtifact: 5 })
    publication = await publishModel(
      join(scratch.dir, 'packed'),
      tracker.url,
      NodeIdentity.generate(),
      join(scratch.dir, 'publisher'),
    )
    const modelId = publication.manifest.modelId
    for (const [name, relay] of [
      ['direct', false],
      ['relayed', true],
    ] as const) {
      const host = new Host({
        ...{ trackerUrl: tracker.url, dataDir: join(scratch.dir, name), modelId, blocks: [0, 5] },
        ...{ threads: 1, relay },
      })
      hosts.push(host)
      await host.start()
    }
    ;[direct, relayed] = hosts as [Host, Host]
    expect(relayed.state.endpoint).toBeNull()
  }, 120_000)

  afterAll(async () => {
    for (const h of hosts) await h.stop(500)
    await publication?.close()
    await tracker?.close()
    await scratch?.cleanup()
  })

  it('a relayed host answers a ping frame through the relay with a pong of the same step and bytes', async () => {
    const client = await SwarmClient.connect(tracker.url, NodeIdentity.generate())
    try {
      const payload = randomBytes(16)
      const ping = encodeFrame({
        ...{ kind: 'ping', dtype: 'json', flags: 0, session: NO_SESSION, step: 77 },
        ...{ position: 0, tokens: 0, width: 0, payload },
      })
      const relay = (frame: Uint8Array) =>
        callRpc(client.tracker, ClientToTracker, 'relay.forward', { hostId: relayed.hostId, frame })
      const pong = decodeFrame((await relay(ping)).frame)
      expect(pong).toMatchObject({ kind: 'pong', step: 77, session: NO_SESSION })
      expect(Buffer.from(pong.payload).equals(payload)).toBe(true)
      // a ping larger than a ping may be is refused with a typed error, and the host keeps answering
      const big = encodeFrame({ ...decodeFrame(ping), payload: randomBytes(65) })
      expect(decodeFrame((await relay(big)).frame).kind).toBe('error')
      const ms = await new FramePinger(async (frame) => decodeFrame((await relay(frame)).frame)).ping(5000)
      expect(ms).toBeGreaterThan(0)
      // through the relay's RPC, as a client measuring the hosts its route named does
      const measured = await measureRelayed(client.tracker, [relayed.hostId])
      expect(measured.get(relayed.hostId)?.length).toBe(3)
    } finally {
      client.close()
    }
  })

  it(
    'a client routed around it measures it through the relay, one routed through it by its link; the tracker keeps ' +
      'both',
    async () => {
      const modelId = publication.manifest.modelId
      const run = async (client: SwarmClient) => {
        const generation = client.generate({ modelId, prompt: 'Once upon a time', maxTokens: 4 })
        let next = await generation.next()
        while (!next.done) next = await generation.next()
        return next.value.route.map((h) => h.hostId)
      }
      // (quorum 3: one other client's report makes no swarm figure, so each figure read here is the client's own)
      const reported = (id: NodeIdentity, hostId: string) => tracker.latencies.roundTrip(id.id, hostId)
      const [aroundId, throughId] = [NodeIdentity.generate(), NodeIdentity.generate()]
      const around = await SwarmClient.connect(tracker.url, aroundId)
      try {
        // both unmeasured: the direct host costs no relay, so the route goes around the relayed one and asks the
        // client to measure it through the relay
        expect(await run(around)).toEqual([direct.hostId])
        await vi.waitFor(() => expect(reported(aroundId, relayed.hostId)).toBeGreaterThan(0), { timeout: 10_000 })
        expect(reported(aroundId, direct.hostId)).toBeGreaterThan(0)
      } finally {
        around.close()
      }
      // the direct host gone: routed through the relayed host, whose session link measures it by ping frame
      await direct.stop(500)
      hosts.splice(hosts.indexOf(direct), 1)
      const through = await SwarmClient.connect(tracker.url, throughId)
      try {
        await vi.waitFor(() => expect(tracker.registry.get(direct.hostId)?.online).not.toBe(true), { timeout: 10_000 })
        expect(await run(through)).toEqual([relayed.hostId])
        await vi.waitFor(() => expect(reported(throughId, relayed.hostId)).toBeGreaterThan(0), { timeout: 10_000 })
      } finally {
        through.close()
      }
    },
  )
})
