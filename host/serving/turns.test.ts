// A conversation's turns at a real host of the whole stories260K model over loopback: the turn's ticket (route.turn)
// taken on the open session, its first step's prompt, the refusals, and kept sessions given up under pressure so the
// cache they hold never passes the host's bounds.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NodeIdentity } from '../../identity/keys'
import type { ShardRuntime } from '../../native'
import { type Manifest, NeuronError } from '../../protocol'
import { connect, errorOf, session, type ticketing, tokens, wholeStories } from '../../test/shard-client'
import { squattedSession } from './admission'
import { ShardServer } from './shard-server'

let stories: Awaited<ReturnType<typeof wholeStories>>
let manifest: Manifest
let runtime: ShardRuntime
let serverOptions: ReturnType<typeof ticketing>['serverOptions']
let ticketedOpen: ReturnType<typeof ticketing>['ticketedOpen']
const body = (maxTokens: number) => ({
  modelId: manifest.modelId,
  blocks: [0, 5] as [number, number],
  maxTokens,
  sampling: { temperature: 0 },
})
/** A session's first turn: a prompt of 3 at step 1, one token at step 2 (positions 0 to 3 held after). */
const PROMPT = [1, 403, 407]

beforeAll(async () => {
  stories = await wholeStories()
  ;({ manifest, runtime, serverOptions, ticketedOpen } = stories)
})
afterAll(() => stories?.close())

describe('a turn on an open session', () => {
  let server: ShardServer
  let url = ''
  beforeAll(async () => {
    server = new ShardServer(runtime, serverOptions({ maxSessions: 4 }))
    url = await server.listen()
  })
  afterAll(async () => {
    await server?.close()
  })

  it('takes the turn’s prompt at its first step once the turn’s ticket is taken, and refuses it before', async () => {
    const c = await connect(url)
    const s = session(1)
    try {
      expect((await c.exchange(ticketedOpen(s, body(64), { promptTokens: 3 }))).kind).toBe('ok')
      expect((await c.exchange(tokens(s, 1, 0, PROMPT))).kind).toBe('token')
      expect((await c.exchange(tokens(s, 2, 3, [261]))).kind).toBe('token')
      // the next turn's prompt on the first turn's ticket: refused as before
      expect(errorOf(await c.exchange(tokens(s, 3, 4, [378, 290, 261])))).toMatchObject({ code: 'tokens_not_ticketed' })
      const turn = { step: 3, position: 4, tokens: 3 }
      expect((await c.exchange(ticketedOpen(s, body(64), { promptTokens: 3, turn }))).kind).toBe('ok')
      // at another position than the turn's: refused
      expect(errorOf(await c.exchange(tokens(s, 3, 5, [378, 290, 261])))).toMatchObject({
        code: 'tokens_not_ticketed',
      })
      expect((await c.exchange(tokens(s, 3, 4, [378, 290, 261]))).kind).toBe('token')
      expect((await c.exchange(tokens(s, 4, 7, [261]))).kind).toBe('token')
      // an older turn's ticket does not come back
      expect(errorOf(await c.exchange(ticketedOpen(s, body(64), { promptTokens: 3, turn })))).toMatchObject({
        code: 'turn_out_of_order',
      })
    } finally {
      c.close()
    }
  })

  it('rolls the cache back to a turn that starts before the positions it holds end, and refuses a gap', async () => {
    const c = await connect(url)
    const s = session(4)
    try {
      expect((await c.exchange(ticketedOpen(s, body(64), { promptTokens: 3 }))).kind).toBe('ok')
      expect((await c.exchange(tokens(s, 1, 0, PROMPT))).kind).toBe('token')
      expect((await c.exchange(tokens(s, 2, 3, [261]))).kind).toBe('token')
      // positions 0 to 3 held: a turn at 5 would leave a gap
      const gap = { step: 3, position: 5, tokens: 2 }
      expect(errorOf(await c.exchange(ticketedOpen(s, body(64), { promptTokens: 3, turn: gap })))).toMatchObject({
        code: 'turn_out_of_order',
      })
      // back at 2: the prompt's last token and what follows are sent again
      const back = { step: 3, position: 2, tokens: 3 }
      expect((await c.exchange(ticketedOpen(s, body(64), { promptTokens: 3, turn: back }))).kind).toBe('ok')
      expect((await c.exchange(tokens(s, 3, 2, [407, 290, 261]))).kind).toBe('token')
      expect((await c.exchange(tokens(s, 4, 5, [378]))).kind).toBe('token')
    } finally {
      c.close()
    }
  })

  it(
    'refuses a plain open of an open session, another connection’s turn, another client’s, and a turn of a ' +
      'session not here',
    async () => {
      const c = await connect(url)
      const other = await connect(url)
      const s = session(2)
      const turn = { step: 3, position: 4, tokens: 2 }
      try {
        expect((await c.exchange(ticketedOpen(s, body(64), { promptTokens: 3 }))).kind).toBe('ok')
        expect((await c.exchange(tokens(s, 1, 0, PROMPT))).kind).toBe('token')
        expect(errorOf(await c.exchange(ticketedOpen(s, body(64), { promptTokens: 3 })))).toMatchObject({
          code: 'session_exists',
        })
        expect(errorOf(await other.exchange(ticketedOpen(s, body(64), { promptTokens: 3, turn })))).toMatchObject({
          code: 'not_your_session',
        })
        const stranger = NodeIdentity.generate()
        expect(
          errorOf(await c.exchange(ticketedOpen(s, body(64), { promptTokens: 3, turn }, { client: stranger }))),
        ).toMatchObject({ code: 'turn_mismatch' })
        expect(errorOf(await c.exchange(ticketedOpen(s, body(32), { promptTokens: 3, turn })))).toMatchObject({
          code: 'turn_mismatch',
        })
        expect(errorOf(await c.exchange(ticketedOpen(session(3), body(64), { promptTokens: 3, turn })))).toMatchObject({
          code: 'unknown_session',
        })
      } finally {
        c.close()
        other.close()
      }
    },
  )
})

describe('kept sessions under pressure', () => {
  it('are given up, the least recently used first, so the cache held never passes the KV budget', async () => {
    // room for two sessions of 256 positions: a third open gives up the session idle longest
    const server = new ShardServer(
      runtime,
      serverOptions({ maxSessions: 4, limits: { kvBudgetTokens: 512 }, evictIdleMs: 200 }),
    )
    const url = await server.listen()
    const a = await connect(url)
    const b = await connect(url)
    const keyB = NodeIdentity.generate()
    try {
      for (const n of [11, 12]) {
        expect((await a.exchange(ticketedOpen(session(n), body(256), { promptTokens: 3 }))).kind).toBe('ok')
        expect((await a.exchange(tokens(session(n), 1, 0, PROMPT))).kind).toBe('token')
        await new Promise((r) => setTimeout(r, 50))
      }
      // both kept between turns; session 12 was used last, and again now
      await new Promise((r) => setTimeout(r, 250))
      expect((await a.exchange(tokens(session(12), 2, 3, [261]))).kind).toBe('token')
      expect(server.idleOpens(Date.now())).toBe(1)
      const opened = ticketedOpen(session(13), body(256), { promptTokens: 3 }, { client: keyB })
      expect((await b.exchange(opened)).kind).toBe('ok')
      expect(server.activeSessions).toBe(2)
      // session 11, idle longest, was given up: its next turn is told its session is gone
      const turn = { step: 2, position: 3, tokens: 1 }
      expect(errorOf(await a.exchange(ticketedOpen(session(11), body(256), { promptTokens: 3, turn })))).toMatchObject({
        code: 'unknown_session',
      })
      // session 12, in use within the grace, stays: a fourth open waits for room
      const fourth = ticketedOpen(session(14), body(256), { promptTokens: 3 }, { client: keyB })
      expect(errorOf(await b.exchange(fourth))).toMatchObject({ code: 'kv_budget_full' })
      expect((await a.exchange(tokens(session(12), 3, 4, [378]))).kind).toBe('token')
    } finally {
      a.close()
      b.close()
      await server.close()
    }
  })
})

describe('which idle session a full host gives up', () => {
  const full = new NeuronError('busy', 'full')
  const held = (clientKey: string, lastUsed: number, busy = false) => ({
    clientKey,
    open: { maxTokens: 64 },
    probe: false,
    stepped: true,
    lastUsed,
    steps: { busy },
  })

  it('never one with a step in flight (a long prefill), however long ago it was last stepped', () => {
    const now = 100_000
    const sessions: [string, ReturnType<typeof held>][] = [
      ['prefilling', held('a', 0, true)],
      ['kept', held('b', 50_000)],
    ]
    expect(squattedSession(full, 'c', sessions, now)).toBe('kept')
    expect(squattedSession(full, 'c', sessions.slice(0, 1), now)).toBeUndefined()
    // past its own bound, a key gives up only its own
    expect(squattedSession(new NeuronError('too_many_sessions', 'own'), 'c', sessions, now)).toBeUndefined()
    expect(squattedSession(new NeuronError('too_many_sessions', 'own'), 'b', sessions, now)).toBe('kept')
  })
})
