// A host's prefix cache with a real host of the whole stories260K model over loopback: a session whose ticket forks an
// earlier one of the same key starts from a copy of its cache (only the prompt after it is stepped) and answers as a
// fresh session given the whole prompt; another key, or positions the host never held, are refused; kept caches give
// way to opens within the KV budget, and go at their keep time.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NodeIdentity } from '../../identity/keys'
import type { ShardRuntime } from '../../native'
import { type Frame, jsonFrame, type Manifest, readJson, SampledToken } from '../../protocol'
import { connect, errorOf, session, type ticketing, tokens, wholeStories } from '../../test/shard-client'
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
/** "Once upon a time" and on: 24 tokens the sessions share, then 6 each adds. */
const SHARED = [
  1, 403, 407, 31, 261, 31, 378, 290, 261, 288, 300, 402, 263, 295, 266, 320, 276, 410, 271, 267, 288, 31, 280, 290,
]
const OWN = [266, 320, 276, 410, 271, 267]
const token = (f: Frame) => {
  if (f.kind !== 'token') throw new Error(`expected a token, got ${f.kind}: ${JSON.stringify(errorOf(f))}`)
  return readJson(f, SampledToken).token
}
const close = (s: string) => jsonFrame('close', s, 0xfffffffe, {})

beforeAll(async () => {
  stories = await wholeStories()
  ;({ manifest, runtime, serverOptions, ticketedOpen } = stories)
})
afterAll(() => stories?.close())

/** A session's greedy tokens after `prompt` from `position`, `n` of them (step 1 carries the prompt). */
async function greedyRun(
  c: Awaited<ReturnType<typeof connect>>,
  s: string,
  prompt: number[],
  position: number,
  n: number,
): Promise<number[]> {
  const out = [token(await c.exchange(tokens(s, 1, position, prompt)))]
  for (let i = 1; i < n; i++)
    out.push(token(await c.exchange(tokens(s, i + 1, position + prompt.length + i - 1, [out.at(-1) as number]))))
  return out
}

describe('a session that starts from a closed session’s cache', () => {
  let server: ShardServer
  let url = ''
  beforeAll(async () => {
    server = new ShardServer(runtime, serverOptions({ maxSessions: 4 }))
    url = await server.listen()
  })
  afterAll(async () => {
    await server?.close()
  })

  it('steps only the prompt after the shared positions, answering as a fresh session of the whole prompt', async () => {
    const c = await connect(url)
    try {
      const [parent, child, fresh] = [session(1), session(2), session(3)]
      // the parent ran the shared tokens and 4 of its own, then its client closed it: the host keeps its cache
      expect((await c.exchange(ticketedOpen(parent, body(64), { promptTokens: 28 }))).kind).toBe('ok')
      await greedyRun(c, parent, [...SHARED, 378, 290, 261, 288], 0, 3)
      expect((await c.exchange(close(parent))).kind).toBe('ok')
      const fork = { session: parent, position: SHARED.length }
      expect((await c.exchange(ticketedOpen(child, body(64), { promptTokens: OWN.length, fork }))).kind).toBe('ok')
      // step 1 runs at the fork's position, not at 0
      expect(errorOf(await c.exchange(tokens(child, 1, 0, OWN)))).toMatchObject({ code: 'step_out_of_order' })
      const forked = await greedyRun(c, child, OWN, SHARED.length, 8)
      expect((await c.exchange(ticketedOpen(fresh, body(64), { promptTokens: 30 }))).kind).toBe('ok')
      const whole = await greedyRun(c, fresh, [...SHARED, ...OWN], 0, 8)
      // greedy tokens of the same prompt: the copied positions are the ones the fresh session computes
      expect(forked).toEqual(whole)
      // a second session starts from the same kept cache
      const again = session(4)
      expect((await c.exchange(ticketedOpen(again, body(64), { promptTokens: OWN.length, fork }))).kind).toBe('ok')
      expect(await greedyRun(c, again, OWN, SHARED.length, 8)).toEqual(whole)
      for (const s of [child, fresh, again]) await c.exchange(close(s))
    } finally {
      c.close()
    }
  })

  it('refuses another key, positions the parent never held, and a parent this host never ran', async () => {
    const c = await connect(url)
    try {
      const parent = session(11)
      expect((await c.exchange(ticketedOpen(parent, body(64), { promptTokens: SHARED.length }))).kind).toBe('ok')
      await greedyRun(c, parent, SHARED, 0, 1)
      expect((await c.exchange(close(parent))).kind).toBe('ok')
      const other = NodeIdentity.generate()
      const asOther = ticketedOpen(
        session(12),
        body(64),
        { promptTokens: 4, fork: { session: parent, position: 8 } },
        { client: other },
      )
      expect(errorOf(await c.exchange(asOther))).toMatchObject({ code: 'prefix_gone' })
      const past = ticketedOpen(session(13), body(64), { promptTokens: 4, fork: { session: parent, position: 40 } })
      expect(errorOf(await c.exchange(past))).toMatchObject({ code: 'prefix_gone' })
      const never = ticketedOpen(session(14), body(64), {
        promptTokens: 4,
        fork: { session: session(99), position: 8 },
      })
      expect(errorOf(await c.exchange(never))).toMatchObject({ code: 'prefix_gone' })
      // a refused fork holds nothing: the key still opens its full share of sessions (all but one of 4)
      const opened = [21, 22, 23].map(session)
      for (const s of opened) expect((await c.exchange(ticketedOpen(s, body(64), { promptTokens: 4 }))).kind).toBe('ok')
      for (const s of opened) await c.exchange(close(s))
    } finally {
      c.close()
    }
  })
})

describe('kept caches within the host’s bounds', () => {
  it('give way to an open that needs their room, and go at their keep time', async () => {
    // room for two sessions of 64 positions: two kept caches fill it
    const server = new ShardServer(
      runtime,
      serverOptions({ maxSessions: 4, limits: { kvBudgetTokens: 128 }, prefixKeepMs: 300 }),
    )
    const url = await server.listen()
    const c = await connect(url)
    try {
      const [a, b] = [session(31), session(32)]
      for (const s of [a, b]) {
        expect((await c.exchange(ticketedOpen(s, body(64), { promptTokens: SHARED.length }))).kind).toBe('ok')
        await greedyRun(c, s, SHARED, 0, 1)
        expect((await c.exchange(close(s))).kind).toBe('ok')
      }
      // a new session of 64 needs one cache's room: the least recently used (a) is given up, b stays
      const opened = session(33)
      expect((await c.exchange(ticketedOpen(opened, body(64), { promptTokens: 4 }))).kind).toBe('ok')
      const fromA = ticketedOpen(session(34), body(64), { promptTokens: 4, fork: { session: a, position: 8 } })
      expect(errorOf(await c.exchange(fromA))).toMatchObject({ code: 'prefix_gone' })
      // closed unstepped, it leaves no cache: b and a new session fit again
      await c.exchange(close(opened))
      const fromB = session(35)
      const forked = await c.exchange(
        ticketedOpen(fromB, body(64), { promptTokens: 4, fork: { session: b, position: 8 } }),
      )
      expect(errorOf(forked)).toBeUndefined()
      await c.exchange(close(fromB))
      // past the keep time: the reaper (every 7.5 s at most) frees it
      await new Promise((r) => setTimeout(r, 8_000))
      const late = ticketedOpen(session(36), body(64), { promptTokens: 4, fork: { session: b, position: 8 } })
      expect(errorOf(await c.exchange(late))).toMatchObject({ code: 'prefix_gone' })
    } finally {
      c.close()
      await server.close()
    }
  })
})
