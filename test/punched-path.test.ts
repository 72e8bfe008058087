// Issue 39, hole punching on 127.0.0.1: a host that accepts no connections (--relay) is reached over a WebRTC data
// channel the client punches to it (werift; the tracker carries the offer and the answer), before any relay. Real
// tracker, real host, real client, the real GGUF: llama.cpp's greedy tokens, and the tracker relays no byte for the
// pair; with punching off, the same tokens through the tracker's relay. The attacks a public swarm brings: an offer
// that is not one, a key taking more than its share of punched channels, another key closing this client's session.
// (Across routers, test/network/ice-pairs.test.ts says which homes ICE connects.)
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { z } from 'zod'
import { SwarmClient } from '../client/swarm-client'
import { iceConfig, offerChannel } from '../dataplane/punched-channel'
import { PunchedPath } from '../dataplane/punched-link'
import { packModel } from '../gguf/pack'
import { Host } from '../host/host'
import { MAX_PUNCHED_PER_KEY } from '../host/network/punched-peers'
import { type Publication, publishModel } from '../host/publish'
import { NodeIdentity } from '../identity/keys'
import { oracleGreedy, oracleModel } from '../native/oracle'
import { ClientToTracker, callRpc, decodeFrame, jsonFrame, readJson } from '../protocol'
import { STORIES_260K, scratchDir } from './models'
import { Tracker } from './programs'

const TOKENS = 16

describe('a channel punched to a host that accepts no connections', () => {
  let scratch: { dir: string; cleanup: () => Promise<void> }
  let tracker: Tracker
  let publication: Publication
  let host: Host
  let prompt: number[] = []
  let oracle: number[] = []

  beforeAll(async () => {
    scratch = await scratchDir('neuron-punched-')
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
    host = new Host({
      ...{ trackerUrl: tracker.url, dataDir: join(scratch.dir, 'host'), modelId, blocks: [0, 5] },
      ...{ threads: 1, relay: true },
    })
    await host.start()
    expect(host.state.endpoint).toBeNull()
    const llama = await oracleModel(STORIES_260K)
    prompt = [...llama.tokenize('Once upon a time', true)]
    oracle = (await oracleGreedy(llama, prompt, TOKENS, publication.manifest.nVocab, { threads: 1 })).map(
      (s) => s.token,
    )
    await llama.dispose()
  }, 120_000)

  afterAll(async () => {
    await host?.stop(500)
    await publication?.close()
    await tracker?.close()
    await scratch?.cleanup()
  })

  async function generate(client: SwarmClient): Promise<{ tokens: number[]; session: string }> {
    const tokens: number[] = []
    const run = client.generate({
      modelId: publication.manifest.modelId,
      prompt,
      maxTokens: TOKENS,
      stopAtEog: false,
    })
    let next = await run.next()
    while (!next.done) {
      tokens.push(next.value.token)
      next = await run.next()
    }
    return { tokens, session: next.value.session }
  }

  it("gives llama.cpp's greedy tokens over the punched channel, and the tracker relays no byte for it", async () => {
    const lines: string[] = []
    const client = await SwarmClient.connect(tracker.url, NodeIdentity.generate(), (l) => lines.push(l), {
      punch: true,
    })
    try {
      const before = tracker.relay.bytesFor(host.hostId)
      expect((await generate(client)).tokens).toEqual(oracle)
      // a second session reuses the channel: no second punch
      expect((await generate(client)).tokens).toEqual(oracle)
      expect(tracker.relay.bytesFor(host.hostId) - before).toBe(0)
      expect(lines.filter((l) => l.startsWith('punched a channel to host'))).toHaveLength(1)
    } finally {
      await client.close()
    }
    // punching off: the same tokens, through the tracker's relay
    const relayed = await SwarmClient.connect(tracker.url, NodeIdentity.generate(), () => {}, { punch: false })
    try {
      const before = tracker.relay.bytesFor(host.hostId)
      expect((await generate(relayed)).tokens).toEqual(oracle)
      expect(tracker.relay.bytesFor(host.hostId) - before).toBeGreaterThan(0)
    } finally {
      await relayed.close()
    }
  }, 60_000)

  it('answers an offer that is not one with a typed error, and keeps serving', async () => {
    const client = await SwarmClient.connect(tracker.url, NodeIdentity.generate(), () => {}, { punch: true })
    try {
      // sent as a hostile client would, past the client's own checks
      const raw = client.tracker as unknown as { timeout(ms: number): { emitWithAck(e: string, p: unknown): unknown } }
      const offer = (sdp: string) => raw.timeout(15_000).emitWithAck('punch.open', { hostId: host.hostId, offer: sdp })
      const refused = (code: string) => ({ ok: false, error: { code } })
      expect(await offer('hello')).toMatchObject(refused('bad_request'))
      expect(await offer(`v=0\r\n${'a'.repeat(20_000)}`)).toMatchObject(refused('bad_request'))
      expect(await offer('v=0\r\nnot a description')).toMatchObject(refused('bad_offer'))
      expect((await generate(client)).tokens).toEqual(oracle)
    } finally {
      await client.close()
    }
  }, 60_000)

  it("holds one key to its share of punched channels, and no other key can close this client's session", async () => {
    const identity = NodeIdentity.generate()
    const client = await SwarmClient.connect(tracker.url, identity, () => {}, { punch: true })
    const paths: PunchedPath[] = []
    const relayedBefore = tracker.relay.bytesFor(host.hostId)
    try {
      // a session over the client's own punched channel, one of its share
      const session = randomBytes(16).toString('hex')
      const run = client.generate({ modelId: publication.manifest.modelId, prompt, maxTokens: 4, session })
      await run.next()
      expect(tracker.relay.bytesFor(host.hostId)).toBe(relayedBefore)
      const signal = async (offer: string) =>
        (await callRpc(client.tracker, ClientToTracker, 'punch.open', { hostId: host.hostId, offer })).answer
      for (let i = 1; i < MAX_PUNCHED_PER_KEY; i++)
        paths.push(
          new PunchedPath(host.hostId, await offerChannel(signal, iceConfig(tracker.url, tracker.stunPort ?? 0))),
        )
      await expect(offerChannel(signal, iceConfig(tracker.url, tracker.stunPort ?? 0))).rejects.toMatchObject({
        code: 'punch_share',
      })
      // the session is this key's: another key's close through the relay is refused
      const intruder = await SwarmClient.connect(tracker.url, NodeIdentity.generate(), () => {}, { punch: false })
      try {
        const { frame } = await callRpc(intruder.tracker, ClientToTracker, 'relay.forward', {
          hostId: host.hostId,
          frame: jsonFrame('close', session, 0, {}),
        })
        expect(readJson(decodeFrame(frame), z.object({ code: z.string() }))).toEqual({ code: 'not_your_session' })
      } finally {
        await intruder.close()
      }
      let tokens = 1
      for (let next = await run.next(); !next.done; next = await run.next()) tokens++
      expect(tokens).toBe(4)
    } finally {
      for (const p of paths) p.close()
      await client.close()
    }
  }, 60_000)
})
