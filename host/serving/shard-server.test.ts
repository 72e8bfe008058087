import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packModel } from '../../gguf/pack'
import { NodeIdentity } from '../../identity/keys'
import { ShardRuntime } from '../../native'
import { encodeFrame, jsonFrame, type Manifest, readJson, SampledToken } from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { type Connection, connect, errorOf, session, ticketing, tokens } from '../../test/shard-client'
import { ShardServer } from './shard-server'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let manifest: Manifest
let runtime: ShardRuntime
let server: ShardServer
let url = ''
let ticketedOpen: ReturnType<typeof ticketing>['ticketedOpen']
const MAX_FRAME = 64 * 1024

/** One frame over the shared connection, as any client would send it. */
let shared: Connection
const exchange = (bytes: Uint8Array) => shared.exchange(bytes)

describe(`shard server on loopback`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
    manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed') })
    const fixture = ticketing(manifest)
    ticketedOpen = fixture.ticketedOpen
    runtime = await ShardRuntime.load({
      artifacts: manifest.artifacts.map((a) => join(dir, 'packed', a.file)),
      blocks: [0, 5],
      embed: true,
      head: true,
      threads: 1,
    })
    server = new ShardServer(
      runtime,
      fixture.serverOptions({ maxSessions: 2, maxFrameBytes: MAX_FRAME, limits: { maxSessionsPerClient: 2 } }),
    )
    url = await server.listen()
    shared = await connect(url)
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
      [jsonFrame('hidden', session(1), 1, {}), 'bad_frame', /accepts open, forward, close and ping/],
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
    const owner = await connect(url)
    const intruder = await connect(url)
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
  it(
    'the same signed open again from another connection, before the first step, moves the session there (the ' +
      'client lost the answer on a silent link); another open of it, or the same after a step, is refused',
    async () => {
      const [lost, fresh, intruder] = [await connect(url), await connect(url), await connect(url)]
      try {
        const s = session(45)
        const before = server.activeSessions
        const openFrame = ticketedOpen(s, { modelId: manifest.modelId, blocks: [0, 5], maxTokens: 64 })
        expect((await lost.exchange(openFrame)).kind).toBe('ok')
        // another ticket and signature for the same session id is not the client's open
        const other = ticketedOpen(s, { modelId: manifest.modelId, blocks: [0, 5], maxTokens: 64 })
        expect(errorOf(await intruder.exchange(other))?.code).toBe('session_exists')
        expect((await fresh.exchange(openFrame)).kind).toBe('ok')
        expect(server.activeSessions).toBe(before + 1)
        // the session is the new connection's: the old one can neither step it nor take it back with its late open
        expect(errorOf(await lost.exchange(openFrame))?.code).toBe('session_exists')
        expect(errorOf(await lost.exchange(tokens(s, 1, 0, [1, 403])))?.code).toBe('not_your_session')
        expect((await fresh.exchange(tokens(s, 1, 0, [1, 403, 407]))).kind).toBe('token')
        // stepped, it stays where it is, even for its own open
        expect(errorOf(await intruder.exchange(openFrame))?.code).toBe('session_exists')
        expect((await fresh.exchange(jsonFrame('close', s, 0, {}))).kind).toBe('ok')
      } finally {
        for (const c of [lost, fresh, intruder]) c.close()
      }
    },
  )
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
})
