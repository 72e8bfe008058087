import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { forwardFrame } from '../../dataplane/hop-frames'
import { packModel } from '../../gguf/pack'
import { NodeIdentity } from '../../identity/keys'
import { manifestSha256, signOpen, signTicket } from '../../identity/tickets'
import { ShardRuntime } from '../../native'
import {
  decodeFrame,
  encodeFrame,
  type Frame,
  jsonFrame,
  MAX_PROBE_TOKENS,
  type Manifest,
  readJson,
  SampledToken,
  type Ticket,
} from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { PROBE_SLOTS } from './admission'
import { ShardServer, type ShardServerOptions } from './shard-server'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let manifest: Manifest
let runtime: ShardRuntime
let server: ShardServer
let url = ''
const MAX_FRAME = 64 * 1024

/** A client's connection to the host: frames in, one answer each, in order. */
interface Connection {
  exchange(bytes: Uint8Array): Promise<Frame>
  close(): void
}

async function connect(at = url): Promise<Connection> {
  const socket = new WebSocket(at)
  await new Promise((resolve, reject) => {
    socket.once('open', resolve)
    socket.once('error', reject)
  })
  return {
    async exchange(bytes) {
      const reply = new Promise<Buffer>((resolve) => socket.once('message', (data) => resolve(data as Buffer)))
      socket.send(bytes)
      return decodeFrame(await reply)
    },
    close: () => socket.close(),
  }
}

/** One frame over the shared connection, as any client would send it. */
let shared: Connection
const exchange = (bytes: Uint8Array) => shared.exchange(bytes)

const trackerKey = NodeIdentity.generate()
const clientKey = NodeIdentity.generate()
const HOST_ID = 'ab'.repeat(10)

/** A server of the whole model whose opens need `trackerKey`'s tickets for HOST_ID. */
function serverOptions(
  options: Partial<ShardServerOptions> & Pick<ShardServerOptions, 'maxSessions'>,
): ShardServerOptions {
  const tickets = { trackerKey: () => trackerKey.publicKey, hostId: HOST_ID, manifestSha256: manifestSha256(manifest) }
  return {
    modelId: manifest.modelId,
    blocks: [0, 5],
    embed: true,
    head: true,
    nEmbd: manifest.nEmbd,
    tickets,
    ...options,
  }
}

/**
 * An open frame carrying the tracker's ticket for `body`, signed by the client (`ticket` overrides the ticket's terms).
 */
function ticketedOpen(
  s: string,
  body: { modelId: unknown; blocks: [number, number]; maxTokens: number; [k: string]: unknown },
  ticket: Partial<Parameters<typeof signTicket>[1]> = {},
  /**
   * `client`: the key the ticket is issued to; `signer`: who signs the open (default the client); `forge`: the client's
   * edit of the signed ticket.
   */
  options: { tracker?: NodeIdentity; client?: NodeIdentity; signer?: NodeIdentity; forge?: (t: Ticket) => Ticket } = {},
): Uint8Array {
  const signed = signTicket(options.tracker ?? trackerKey, {
    session: s,
    clientKey: (options.client ?? clientKey).publicKey,
    hostId: HOST_ID,
    blocks: body.blocks,
    maxTokens: body.maxTokens,
    promptTokens: body.maxTokens,
    modelId: manifest.modelId,
    manifestSha256: manifestSha256(manifest),
    price: { promptMicroPerToken: 25, completionMicroPerToken: 100 },
    expiresAt: Date.now() + 60_000,
    ...ticket,
  })
  const t = options.forge?.(signed) ?? signed
  return jsonFrame('open', s, 0, {
    ...body,
    ticket: t,
    signature: signOpen(options.signer ?? options.client ?? clientKey, t, body),
  })
}

const session = (n: number) => n.toString(16).padStart(32, '0')

interface SignedAs {
  blocks?: readonly [number, number]
  signer?: NodeIdentity
  flags?: number
}
/** A forward of token ids, signed by the session's client (`signer`) for the blocks it opened, as every step is. */
const tokens = (
  s: string,
  step: number,
  position: number,
  ids: number[],
  { blocks = [0, 5], signer = clientKey, flags = 0 }: SignedAs = {},
) => {
  const data = Int32Array.from(ids)
  return forwardFrame(
    { dtype: 'i32', tokens: ids.length, width: 1, payload: new Uint8Array(data.buffer) },
    flags,
    s,
    step,
    position,
    {
      identity: signer,
      hostId: HOST_ID,
      blocks,
    },
  )
}
const errorOf = (f: Frame) =>
  f.kind === 'error' ? (JSON.parse(Buffer.from(f.payload).toString()) as { code: string; message: string }) : undefined

describe(`shard server on loopback`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
    manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed') })
    runtime = await ShardRuntime.load({
      artifacts: manifest.artifacts.map((a) => join(dir, 'packed', a.file)),
      blocks: [0, 5],
      embed: true,
      head: true,
      threads: 1,
    })
    server = new ShardServer(
      runtime,
      serverOptions({ maxSessions: 2, maxFrameBytes: MAX_FRAME, limits: { maxSessionsPerClient: 2 } }),
    )
    url = await server.listen()
    shared = await connect()
  })
  afterAll(async () => {
    shared?.close()
    await server?.close()
    runtime?.dispose()
    await cleanup()
  })

  it('answers a burst of bad frames with typed errors, and a good session still works after', async () => {
    const open = (s: string, body: { modelId: unknown; blocks: [number, number]; maxTokens: number }) =>
      ticketedOpen(s, body)
    const good = {
      modelId: manifest.modelId,
      blocks: [0, 5] as [number, number],
      maxTokens: 64,
      sampling: { temperature: 0 },
    }
    await exchange(open(session(1), good))
    const hidden = new Float32Array(manifest.nEmbd * 2)
    const cases: [Uint8Array, string, RegExp][] = [
      [Buffer.from('hello'), 'bad_frame', /at least 48 bytes/],
      [Buffer.alloc(64, 7), 'bad_frame', /bad magic/],
      [tokens(session(1), 1, 0, [1, 2]).subarray(0, 50), 'bad_frame', /payload bytes/],
      [
        encodeFrame({
          kind: 'forward',
          dtype: 'f32',
          flags: 0,
          session: session(1),
          step: 1,
          position: 0,
          tokens: 2,
          width: manifest.nEmbd,
          payload: new Uint8Array(hidden.buffer),
        }),
        'bad_frame',
        /takes token ids/,
      ],
      [tokens(session(99), 1, 0, [1]), 'unknown_session', /no open session/],
      [tokens(session(1), 1, 0, [manifest.nVocab + 5]), 'token_out_of_range', /517/],
      // a step out of order is refused before any work (step-order.ts)
      [tokens(session(1), 1, 63, [1, 2]), 'step_out_of_order', /position 63 is out of order/],
      [
        tokens(session(1), 1, 0, [1], { signer: NodeIdentity.generate() }),
        'bad_step_signature',
        /not signed by the session's client key/,
      ],
      [open(session(2), { ...good, modelId: 'other' }), 'wrong_model', /serves stories260k, not other/],
      [open(session(3), { ...good, blocks: [3, 7] }), 'range_not_served', /\[3, 7\) must lie inside it/],
      [open(session(1), good), 'session_exists', /already open/],
      [jsonFrame('open', session(4), 0, { modelId: 7 }), 'bad_frame', /modelId/],
      [new Uint8Array(MAX_FRAME + 1), 'frame_too_large', /exceeds this host's 65536/],
      [jsonFrame('hidden', session(1), 1, {}), 'bad_frame', /accepts open, forward and close/],
    ]
    for (let round = 0; round < 3; round++) {
      for (const [bytes, code, message] of cases) {
        const reply = await exchange(bytes)
        const error = errorOf(reply)
        expect(error?.code, `round ${round}: expected ${code}, got ${JSON.stringify(error)}`).toMatch(
          new RegExp(`^${code === 'bad_token' || code === 'position_out_of_range' ? '.+' : code}$`),
        )
        expect(error?.message).toMatch(message)
      }
    }
    // Session 1 took no step from the burst; it prefills and samples as if nothing happened.
    const reply = await exchange(tokens(session(1), 1, 0, [1, 403, 407, 261, 378]))
    expect(reply.kind).toBe('token')
    expect(readJson(reply, SampledToken).token).toBeGreaterThan(0)
    expect(server.activeSessions).toBe(1)
  })
  it(
    'opens no session without a valid ticket: missing, forged, for another host, model or blocks, too small, ' +
      'expired, or opened by another key',
    async () => {
      const body = { modelId: manifest.modelId, blocks: [0, 5] as [number, number], maxTokens: 64 }
      const before = server.activeSessions
      const cases: [Uint8Array, string, RegExp][] = [
        [jsonFrame('open', session(20), 0, body), 'no_ticket', /only ticketed sessions/],
        [
          ticketedOpen(session(21), body, {}, { tracker: NodeIdentity.generate() }),
          'bad_ticket',
          /not signed by this host's tracker/,
        ],
        [ticketedOpen(session(22), body, { hostId: 'cd'.repeat(10) }), 'wrong_host', /not this host/],
        [ticketedOpen(session(23), body, { modelId: 'stories-other' }), 'wrong_model', /ticket is for stories-other/],
        [ticketedOpen(session(24), body, { manifestSha256: '0'.repeat(64) }), 'wrong_model', /manifest 000000000000/],
        [ticketedOpen(session(25), body, { blocks: [0, 3] }), 'ticket_mismatch', /covers blocks \[0, 3\)/],
        [ticketedOpen(session(26), body, { maxTokens: 8 }), 'ticket_mismatch', /covers 8 tokens; the open asks for 64/],
        [ticketedOpen(session(27), body, { expiresAt: Date.now() - 5000 }), 'ticket_expired', /expired \d+ s ago/],
        [
          ticketedOpen(session(28), body, {}, { signer: NodeIdentity.generate() }),
          'bad_open_signature',
          /not signed by the ticket's client key/,
        ],
        [ticketedOpen(session(29), body, { session: session(30) }), 'bad_ticket', /for session 0+1e, not 0+1d/],
      ]
      for (const [bytes, code, message] of cases) {
        const error = errorOf(await exchange(bytes))
        expect(error?.code, JSON.stringify(error)).toBe(code)
        expect(error?.message).toMatch(message)
      }
      expect(server.activeSessions).toBe(before)
      // The same terms with a good ticket open.
      expect((await exchange(ticketedOpen(session(31), body))).kind).toBe('ok')
      expect((await exchange(jsonFrame('close', session(31), 0, {}))).kind).toBe('ok')
    },
  )

  it('a second connection can neither forward on nor close another connection’s session', async () => {
    const owner = await connect()
    const intruder = await connect()
    try {
      const s = session(40)
      expect(
        (await owner.exchange(ticketedOpen(s, { modelId: manifest.modelId, blocks: [0, 5], maxTokens: 64 }))).kind,
      ).toBe('ok')
      for (const frame of [tokens(s, 1, 0, [1, 403]), jsonFrame('close', s, 0, {})]) {
        const error = errorOf(await intruder.exchange(frame))
        expect(error?.code).toBe('not_your_session')
        expect(error?.message).toMatch(/opened by another connection/)
      }
      // Untouched: the owner prefills and closes it.
      expect((await owner.exchange(tokens(s, 1, 0, [1, 403, 407]))).kind).toBe('token')
      expect((await owner.exchange(jsonFrame('close', s, 0, {}))).kind).toBe('ok')
    } finally {
      owner.close()
      intruder.close()
    }
  })
  it('serves a step only the tokens its ticket paid for: the declared prompt at step 1, one token after', async () => {
    const s = session(50)
    expect(
      (
        await exchange(
          ticketedOpen(s, { modelId: manifest.modelId, blocks: [0, 5], maxTokens: 64 }, { promptTokens: 3 }),
        )
      ).kind,
    ).toBe('ok')
    expect(errorOf(await exchange(tokens(s, 1, 0, [1, 403, 407, 261, 378])))).toMatchObject({
      code: 'tokens_not_ticketed',
      message: expect.stringMatching(/may carry 3 tokens on this ticket, not 5/),
    })
    expect((await exchange(tokens(s, 1, 0, [1, 403, 407]))).kind).toBe('token')
    expect(errorOf(await exchange(tokens(s, 2, 3, [261, 378])))).toMatchObject({ code: 'tokens_not_ticketed' })
    expect((await exchange(tokens(s, 2, 3, [261]))).kind).toBe('token')
    expect((await exchange(jsonFrame('close', s, 0, {}))).kind).toBe('ok')
  })

  describe("a full host and the tracker's probes", () => {
    let full: ShardServer
    let fullUrl = ''
    beforeAll(async () => {
      full = new ShardServer(runtime, serverOptions({ maxSessions: 2, limits: { maxSessionsPerClient: 1 } }))
      fullUrl = await full.listen()
    })
    afterAll(async () => {
      await full?.close()
    })
    const body = (maxTokens: number) => ({
      modelId: manifest.modelId,
      blocks: [0, 5] as [number, number],
      maxTokens,
      sampling: { temperature: 0 },
    })

    it(
      'a client cannot open a session in the probe slots, by forging its ticket or by asking, while its sessions ' +
        'are taken',
      async () => {
        const c = await connect(fullUrl)
        try {
          expect(
            (await c.exchange(ticketedOpen(session(300), body(64), {}, { client: NodeIdentity.generate() }))).kind,
          ).toBe('ok')
          expect(
            (await c.exchange(ticketedOpen(session(301), body(64), {}, { client: NodeIdentity.generate() }))).kind,
          ).toBe('ok')
          const attacker = NodeIdentity.generate()
          expect(
            errorOf(await c.exchange(ticketedOpen(session(302), body(8), {}, { client: attacker }))),
          ).toMatchObject({
            code: 'busy',
          })
          // its own ticket with the probe mark added: the tracker never signed that
          expect(
            errorOf(
              await c.exchange(
                ticketedOpen(session(303), body(8), {}, { client: attacker, forge: (t) => ({ ...t, probe: true }) }),
              ),
            ),
          ).toMatchObject({
            code: 'bad_ticket',
          })
          // the mark in the open, outside the ticket, is no mark at all
          expect(
            errorOf(
              await c.exchange(ticketedOpen(session(304), { ...body(8), probe: true }, {}, { client: attacker })),
            ),
          ).toMatchObject({ code: 'busy' })
          expect(full.activeSessions).toBe(2)
        } finally {
          for (const s of [300, 301]) await c.exchange(jsonFrame('close', session(s), 0, {}))
          c.close()
        }
      },
    )

    it(
      `answers the tracker's probes past its session limit, ${PROBE_SLOTS} at once, each of a probe's tokens at ` +
        `most, and counts them in no session`,
      async () => {
        const c = await connect(fullUrl)
        const gateway = NodeIdentity.generate()
        try {
          expect(
            (await c.exchange(ticketedOpen(session(310), body(64), {}, { client: NodeIdentity.generate() }))).kind,
          ).toBe('ok')
          expect(
            (await c.exchange(ticketedOpen(session(311), body(64), {}, { client: NodeIdentity.generate() }))).kind,
          ).toBe('ok')
          expect(
            errorOf(await c.exchange(ticketedOpen(session(312), body(12), {}, { client: gateway }))),
          ).toMatchObject({
            code: 'busy',
          })
          // one key, past its one session a key may hold: a probe is held to the probe slots' limits alone
          for (let i = 0; i < PROBE_SLOTS; i++)
            expect(
              (await c.exchange(ticketedOpen(session(313 + i), body(12), { probe: true }, { client: gateway }))).kind,
            ).toBe('ok')
          const answer = await c.exchange(tokens(session(313), 1, 0, [1, 403, 407], { signer: gateway }))
          expect(answer.kind).toBe('token')
          expect(readJson(answer, SampledToken).token).toBeGreaterThanOrEqual(0)
          expect(full.activeSessions).toBe(2)
          expect(
            errorOf(await c.exchange(ticketedOpen(session(320), body(12), { probe: true }, { client: gateway }))),
          ).toMatchObject({
            code: 'probe_slots_full',
          })
          await c.exchange(jsonFrame('close', session(313), 0, {}))
          expect(
            errorOf(
              await c.exchange(
                ticketedOpen(session(321), body(MAX_PROBE_TOKENS + 1), { probe: true }, { client: gateway }),
              ),
            ),
          ).toMatchObject({
            code: 'too_many_tokens',
            message: expect.stringMatching(new RegExp(`probe holds at most ${MAX_PROBE_TOKENS} tokens`)),
          })
          expect(
            (await c.exchange(ticketedOpen(session(322), body(MAX_PROBE_TOKENS), { probe: true }, { client: gateway })))
              .kind,
          ).toBe('ok')
        } finally {
          for (const s of [310, 311, 314, 322]) await c.exchange(jsonFrame('close', session(s), 0, {}))
          c.close()
        }
      },
    )
  })

  describe('a host with small limits', () => {
    let limited: ShardServer
    let limitedUrl = ''
    beforeAll(async () => {
      limited = new ShardServer(
        runtime,
        serverOptions({
          maxSessions: 3,
          limits: { maxSessionTokens: 256, kvBudgetTokens: 640, maxSessionsPerClient: 2 },
          unsteppedSessionMs: 1000,
          maxConnections: 3,
          maxInFlightPerConnection: 2,
        }),
      )
      limitedUrl = await limited.listen()
    })
    afterAll(async () => {
      await limited?.close()
    })
    const body = (maxTokens: number) => ({
      modelId: manifest.modelId,
      blocks: [0, 5] as [number, number],
      maxTokens,
      sampling: { temperature: 0 },
    })

    it('refuses an open past its KV capacity before allocating it: the process does not grow', async () => {
      const c = await connect(limitedUrl)
      try {
        const before = process.memoryUsage().rss
        for (let i = 0; i < 4; i++) {
          const error = errorOf(await c.exchange(ticketedOpen(session(100 + i), body(1_000_000))))
          expect(error?.code).toBe('too_many_tokens')
          expect(error?.message).toMatch(/at most 256 tokens; 1000000 asked/)
        }
        const grewMiB = (process.memoryUsage().rss - before) / 2 ** 20
        console.log(`RSS after 4 opens of 1 000 000 tokens: +${grewMiB.toFixed(1)} MiB`)
        expect(grewMiB).toBeLessThan(16)
        expect(limited.activeSessions).toBe(0)
      } finally {
        c.close()
      }
    })

    it(
      'bounds sessions per client key and the KV budget over all sessions; sessions never stepped are evicted, ' +
        'then a session opens and steps',
      async () => {
        const c = await connect(limitedUrl)
        const other = NodeIdentity.generate()
        try {
          expect((await c.exchange(ticketedOpen(session(110), body(256)))).kind).toBe('ok')
          expect((await c.exchange(ticketedOpen(session(111), body(256)))).kind).toBe('ok')
          expect(errorOf(await c.exchange(ticketedOpen(session(112), body(16))))).toMatchObject({
            code: 'too_many_sessions',
          })
          expect(errorOf(await c.exchange(ticketedOpen(session(113), body(256), {}, { client: other })))).toMatchObject(
            {
              code: 'kv_budget_full',
              message: expect.stringMatching(/128 of 640 tokens free; 256 asked/),
            },
          )
          expect((await c.exchange(ticketedOpen(session(114), body(64), {}, { client: other }))).kind).toBe('ok')
          expect(
            errorOf(await c.exchange(ticketedOpen(session(115), body(1), {}, { client: NodeIdentity.generate() }))),
          ).toMatchObject({ code: 'busy' })
          // Nobody steps them: after the 1 s idle timeout for unstepped sessions every slot is free.
          await new Promise((r) => setTimeout(r, 1600))
          expect(limited.activeSessions).toBe(0)
          expect((await c.exchange(ticketedOpen(session(116), body(64)))).kind).toBe('ok')
          expect((await c.exchange(tokens(session(116), 1, 0, [1, 403, 407]))).kind).toBe('token')
          expect((await c.exchange(jsonFrame('close', session(116), 0, {}))).kind).toBe('ok')
        } finally {
          c.close()
        }
      },
    )

    it('caps connections and the frames one connection has in flight', async () => {
      const raw = new WebSocket(limitedUrl)
      await new Promise((resolve) => raw.once('open', resolve))
      const replies: Frame[] = []
      const all = new Promise<void>((resolve) =>
        raw.on('message', (data) => {
          replies.push(decodeFrame(data as Buffer))
          if (replies.length === 6) resolve()
        }),
      )
      raw.send(ticketedOpen(session(120), body(64)))
      await new Promise((r) => setTimeout(r, 100))
      // Five prefills at once: two are taken, the rest refused at once.
      for (let i = 0; i < 5; i++) raw.send(tokens(session(120), 1 + i, 0, [1, 403, 407, 261, 378]))
      await all
      expect(replies.filter((f) => errorOf(f)?.code === 'too_many_in_flight').length).toBeGreaterThanOrEqual(3)
      raw.close()
      await new Promise((resolve) => raw.once('close', resolve))
      // The host lets go of closed connections on its side too.
      await new Promise((r) => setTimeout(r, 200))
      const sockets = await Promise.all([0, 1, 2].map(() => connect(limitedUrl)))
      const refused = new WebSocket(limitedUrl)
      const closed = await new Promise<number>((resolve) => refused.once('close', (code) => resolve(code)))
      expect(closed).toBe(1013)
      for (const s of sockets) s.close()
    })
  })
})
