// An open a host reaps for never being stepped must not be a later hop still waiting for a long prompt from the hops
// before it (found by bench:conversation: a 2 600-token prompt through 3 hosts of a 1.1B model on one CPU thread each
// reached the last hop ~40 s after its open, the host had closed it at 30 s, and the chat failed with
// `unknown_session`). A real host of stories260K's blocks [2, 5) on loopback, with the unstepped bound cut to 300 ms.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connect, session, wholeStories } from '../../test/shard-client'
import { upstreamWaitMs } from './served-session'
import { ShardServer } from './shard-server'

const UNSTEPPED_MS = 300
let stories: Awaited<ReturnType<typeof wholeStories>>
let server: ShardServer
let url = ''

beforeAll(async () => {
  stories = await wholeStories([2, 5])
  server = new ShardServer(
    stories.runtime,
    stories.serverOptions({ maxSessions: 4, blocks: [2, 5], embed: false, unsteppedSessionMs: UNSTEPPED_MS }),
  )
  url = await server.listen()
})

afterAll(async () => {
  await server?.close()
  await stories?.close()
})

describe('opens never stepped', () => {
  it('a hop after the first keeps an open while its prompt may still be prefilled upstream, and reaps one whose ' +
    'prompt is short', async () => {
    const c = await connect(url)
    try {
      const body = { modelId: stories.manifest.modelId, blocks: [2, 5] as [number, number], maxTokens: 256 }
      // 256 prompt tokens through the 2 blocks before this hop: seconds of upstream prefill at 5 ms a token-block
      expect((await c.exchange(stories.ticketedOpen(session(1), body, { promptTokens: 256 }))).kind).toBe('ok')
      // a 1-token prompt is there in milliseconds: its open is reaped at the unstepped bound, as before
      expect((await c.exchange(stories.ticketedOpen(session(2), body, { promptTokens: 1 }))).kind).toBe('ok')
      expect(upstreamWaitMs({ promptTokens: 256, blocks: [2, 5] }, undefined)).toBeGreaterThan(2_000)
      expect(server.activeSessions).toBe(2)
      await new Promise((r) => setTimeout(r, UNSTEPPED_MS * 5))
      expect(server.activeSessions).toBe(1)
      // ...and it is gone once that wait is over too
      await new Promise((r) => setTimeout(r, upstreamWaitMs({ promptTokens: 256, blocks: [2, 5] }, undefined)))
      expect(server.activeSessions).toBe(0)
    } finally {
      c.close()
    }
  }, 30_000)

  it('the wait grows with the blocks before the hop and the prompt, at the host’s own speed, and is bounded', () => {
    expect(upstreamWaitMs({ promptTokens: 2_614, blocks: [14, 22] }, 3.5)).toBeCloseTo(2_614 * 14 * 3.5)
    expect(upstreamWaitMs({ promptTokens: 2_614, blocks: [0, 7] }, 3.5)).toBe(0)
    expect(upstreamWaitMs({ promptTokens: 1_000_000, blocks: [60, 61] }, 50)).toBe(10 * 60_000)
  })
})
