import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import WebSocket from 'ws'
import { z } from 'zod'
import { planRoute } from '../../client/grant-claim'
import { closeHops, type HopState, openHops } from '../../client/open-hops'
import { SwarmClient } from '../../client/swarm-client'
import { packModel } from '../../gguf/pack'
import { NodeIdentity } from '../../identity/keys'
import {
  CIRCUIT_PATH,
  ClientToTracker,
  callRpc,
  decodeFrame,
  type HostSummary,
  jsonFrame,
  type Manifest,
  RESERVATION_PATH,
  readJson,
  reservationMessage,
} from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { Tracker } from '../../test/programs'
import { consumerAccount, hostAccount } from '../../tracker/ledger/accounts'
import { Host } from '../host'
import { type Publication, publishModel } from '../publish'

/** The volunteer relay under test: no channel punched around it (test/punched-path.test.ts tests punching). */
const NO_PUNCH = { punch: false }

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let tracker: Tracker
let publication: Publication
let manifest: Manifest
let clientIdentity: NodeIdentity
let client: SwarmClient
let relayHost: Host

async function complete(
  maxTokens = 16,
): Promise<{ text: string; hops: Array<{ hostId: string; relayHostId?: string; medianMs: number }> }> {
  const run = client.generate({ modelId: manifest.modelId, prompt: 'Once upon a time', maxTokens })
  let text = ''
  let next = await run.next()
  while (!next.done) {
    text += next.value.text
    next = await run.next()
  }
  return { text, hops: [...next.value.route] }
}

async function hosts(): Promise<HostSummary[]> {
  return (await callRpc(client.tracker, ClientToTracker, 'hosts.list', {})).hosts
}

async function reservedAtRelay(hostId: string): Promise<void> {
  await vi.waitFor(
    async () => {
      const relay = (await hosts()).find((h) => h.hostId === relayHost.hostId)
      expect(relay?.state.relayOffer?.reserved.map((r) => r.hostId)).toContain(hostId)
    },
    { timeout: 15_000, interval: 100 },
  )
}

const ErrorBody = z.object({ code: z.string(), message: z.string() })

/**
 * A session of a fresh key (or `as`) opened on every hop of a route and never stepped: its circuit through the relay
 * holds a slot there, as a real client's does.
 */
async function heldSession(as?: SwarmClient): Promise<{ hops: HopState[]; session: string; close(): Promise<void> }> {
  const holder = as ?? (await SwarmClient.connect(tracker.url, NodeIdentity.generate(), () => {}, NO_PUNCH))
  const session = randomBytes(16).toString('hex')
  const plan = { modelId: manifest.modelId, maxTokens: 16, promptTokens: 1, exclude: [], session }
  const route = await planRoute(holder.tracker, holder.hopOpener.identity, plan, () => {})
  const request = { modelId: manifest.modelId, prompt: [1], maxTokens: 15 }
  const hops = await openHops(holder.hopOpener, route.hops, session, request, 16, true)
  return {
    hops,
    session,
    close: async () => {
      await closeHops(hops, session)
      if (as === undefined) await holder.close()
    },
  }
}

/** Opens a raw circuit and sends one frame; resolves with the first answer's error code (or 'ok'). */
function circuitAnswer(url: string, frame: Uint8Array): Promise<{ code: string; socket: WebSocket }> {
  return new Promise((resolve, reject) => {
    const socket = new WebSocket(url)
    socket.once('open', () => socket.send(frame))
    socket.once('message', (data: Buffer) => {
      const f = decodeFrame(data)
      resolve({ code: f.kind === 'error' ? readJson(f, ErrorBody).code : 'ok', socket })
    })
    socket.once('error', reject)
  })
}

describe(`volunteer relays on loopback`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
    tracker = await Tracker.start({
      dbPath: join(dir, 'tracker.sqlite'),
      heartbeatMs: 300,
      newKeyGrantMicro: 10_000_000,
    })
    await packModel({ source: STORIES_260K, out: join(dir, 'packed'), blocksPerArtifact: 1 })
    publication = await publishModel(join(dir, 'packed'), tracker.url, NodeIdentity.generate(), join(dir, 'publisher'))
    manifest = publication.manifest
    clientIdentity = NodeIdentity.generate()
    client = await SwarmClient.connect(tracker.url, clientIdentity, () => {}, NO_PUNCH)
    relayHost = new Host({
      trackerUrl: tracker.url,
      dataDir: join(dir, 'relay'),
      modelId: manifest.modelId,
      blocks: [0, 2],
      threads: 1,
      relayForOthers: { circuits: 2, mbit: 100 },
    })
    await relayHost.start()
  }, 120_000)
  afterAll(async () => {
    client?.close()
    await relayHost?.stop(1000)
    await publication?.close()
    await tracker?.close()
    await cleanup()
  })

  it('a host that accepts no connections reserves at a volunteer relay; its chat equals the direct one, the ' +
    'tracker relays nothing and the relay is paid per frame', async () => {
    const direct = new Host({
      trackerUrl: tracker.url,
      dataDir: join(dir, 'direct'),
      modelId: manifest.modelId,
      blocks: [2, 5],
      threads: 1,
    })
    await direct.start()
    await complete() // warm
    const directStarted = performance.now()
    const viaDirect = await complete()
    const directMs = performance.now() - directStarted
    await direct.stop(1000)
    expect(viaDirect.text.length).toBeGreaterThan(10)

    const hidden = new Host({
      trackerUrl: tracker.url,
      dataDir: join(dir, 'hidden'),
      modelId: manifest.modelId,
      blocks: [2, 5],
      threads: 1,
      relay: true,
    })
    await hidden.start()
    try {
      expect(hidden.state.endpoint).toBeNull()
      await reservedAtRelay(hidden.hostId)
      const ledger = tracker.store.ledger
      const account = await tracker.accounts.byPublicKey(clientIdentity.publicKey)
      const relayBefore = await ledger.balance(hostAccount(relayHost.hostId))
      const clientBefore = account === undefined ? 0 : await ledger.balance(consumerAccount(account.accountId))

      const started = performance.now()
      const viaRelay = await complete()
      const ms = performance.now() - started
      expect(viaRelay.text).toBe(viaDirect.text)
      expect(viaRelay.hops.find((h) => h.hostId === hidden.hostId)?.relayHostId).toBe(relayHost.hostId)
      expect((await hosts()).find((h) => h.hostId === hidden.hostId)?.relayedBytes).toBe(0)

      // the relay hands in its receipts within a second or two; each step's two frames are charged to the client
      await vi.waitFor(
        async () => expect(await ledger.balance(hostAccount(relayHost.hostId))).toBeGreaterThan(relayBefore),
        { timeout: 10_000 },
      )
      const relayEarned = (await ledger.balance(hostAccount(relayHost.hostId))) - relayBefore
      const paying = await tracker.accounts.byPublicKey(clientIdentity.publicKey)
      expect(paying).toBeDefined()
      if (paying !== undefined && account !== undefined)
        expect(await ledger.balance(consumerAccount(paying.accountId))).toBeLessThan(clientBefore)
      console.log(
        JSON.stringify({
          directChatMs: Math.round(directMs),
          relayedChatMs: Math.round(ms),
          relayEarnedMicro: relayEarned,
          tokens: 16,
        }),
      )
    } finally {
      await hidden.stop(1000)
    }
  }, 120_000)

  it('refuses a reservation whose key cannot sign the nonce, and answers a malformed envelope with a typed error ' +
    'while it keeps serving', async () => {
    const base = relayHost.state.endpoint ?? ''
    const liar = NodeIdentity.generate()
    const verdict = await new Promise<unknown>((resolve, reject) => {
      const socket = new WebSocket(new URL(RESERVATION_PATH, base).href)
      socket.on('message', (data: Buffer) => {
        const text = JSON.parse(data.toString()) as { nonce?: string }
        if (text.nonce !== undefined) {
          // signed with another key than the one it claims
          socket.send(
            JSON.stringify({
              publicKey: liar.publicKey,
              signature: NodeIdentity.generate().sign(reservationMessage(relayHost.hostId, text.nonce)),
            }),
          )
        } else resolve(text)
      })
      socket.on('error', reject)
    })
    expect(verdict).toMatchObject({ ok: false, code: 'bad_proof' })

    const honest = NodeIdentity.generate()
    const errors = await new Promise<unknown[]>((resolve, reject) => {
      const got: unknown[] = []
      const socket = new WebSocket(new URL(RESERVATION_PATH, base).href)
      socket.on('message', (data: Buffer, isBinary) => {
        if (isBinary) return
        const text = JSON.parse(data.toString()) as { nonce?: string; ok?: boolean; error?: unknown }
        if (text.nonce !== undefined)
          socket.send(
            JSON.stringify({
              publicKey: honest.publicKey,
              signature: honest.sign(reservationMessage(relayHost.hostId, text.nonce)),
            }),
          )
        else if (text.ok === true) {
          socket.send(new Uint8Array([9, 0, 0]), { binary: true }) // shorter than a header
          socket.send(new Uint8Array([7, 0, 0, 0, 1, 42]), { binary: true }) // unknown kind
        } else if (text.error !== undefined) {
          got.push(text.error)
          if (got.length === 2) {
            socket.close()
            resolve(got)
          }
        }
      })
      socket.on('error', reject)
    })
    expect(errors).toEqual([
      expect.objectContaining({ code: 'bad_envelope' }),
      expect.objectContaining({ code: 'bad_envelope' }),
    ])
    // still serving: a circuit to a host with no reservation gets its typed answer
    const { code, socket } = await circuitAnswer(
      `${new URL(`${CIRCUIT_PATH}/${'f'.repeat(20)}`, base).href}`,
      jsonFrame('close', 'a'.repeat(32), 0, {}),
    )
    socket.close()
    expect(code).toBe('not_reserved')
  }, 60_000)

  it('a relay at its circuit bound refuses the next with a typed error, and the tracker routes that host through ' +
    'its own relay instead', async () => {
    const hidden = new Host({
      trackerUrl: tracker.url,
      dataDir: join(dir, 'hidden2'),
      modelId: manifest.modelId,
      blocks: [2, 5],
      threads: 1,
      relay: true,
    })
    await hidden.start()
    const held: Awaited<ReturnType<typeof heldSession>>[] = []
    try {
      await reservedAtRelay(hidden.hostId)
      // two circuits (its bound), each a ticketed session of its own client, held open and never stepped
      for (let i = 0; i < 2; i++) held.push(await heldSession())
      const third = await heldSession().catch((e: unknown) => e)
      expect(third).toMatchObject({ code: 'relay_full' })
      await vi.waitFor(
        async () =>
          expect((await hosts()).find((h) => h.hostId === relayHost.hostId)?.state.relayOffer?.openCircuits).toBe(2),
        {
          timeout: 10_000,
        },
      )
      const before = (await hosts()).find((h) => h.hostId === hidden.hostId)?.relayedBytes ?? 0
      const chat = await complete(6)
      expect(chat.hops.find((h) => h.hostId === hidden.hostId)?.relayHostId).toBeUndefined()
      expect((await hosts()).find((h) => h.hostId === hidden.hostId)?.relayedBytes).toBeGreaterThan(before)
    } finally {
      for (const s of held) await s.close()
      await hidden.stop(1000)
    }
  }, 120_000)

  it('holds no circuit for a socket without a ticket, and at most its share for one key', async () => {
    const hidden = new Host({
      trackerUrl: tracker.url,
      dataDir: join(dir, 'hidden3'),
      modelId: manifest.modelId,
      blocks: [2, 5],
      threads: 1,
      relay: true,
    })
    await hidden.start()
    const silent: WebSocket[] = []
    try {
      await reservedAtRelay(hidden.hostId)
      const url = new URL(`${CIRCUIT_PATH}/${hidden.hostId}`, relayHost.state.endpoint ?? '').href
      // as many sockets as the relay has circuits, opened by someone with no ticket and sending nothing
      for (let i = 0; i < 2; i++) {
        const socket = new WebSocket(url)
        await new Promise((resolve, reject) => socket.once('open', resolve).once('error', reject))
        silent.push(socket)
      }
      // a frame that is not a ticketed open is refused, naming why
      const unticketed = await circuitAnswer(url, jsonFrame('close', randomBytes(16).toString('hex'), 0, {}))
      unticketed.socket.close()
      expect(unticketed.code).toBe('circuit_unticketed')
      // a real client's chat still goes through the relay
      const chat = await complete(6)
      expect(chat.hops.find((h) => h.hostId === hidden.hostId)?.relayHostId).toBe(relayHost.hostId)
      // one key: its share of this relay's two circuits is one
      const greedy = await SwarmClient.connect(tracker.url, NodeIdentity.generate(), () => {}, NO_PUNCH)
      const first = await heldSession(greedy)
      try {
        await expect(heldSession(greedy)).rejects.toMatchObject({ code: 'relay_share' })
      } finally {
        await first.close()
        await greedy.close()
      }
    } finally {
      for (const s of silent) s.close()
      await hidden.stop(1000)
    }
  }, 120_000)
})
