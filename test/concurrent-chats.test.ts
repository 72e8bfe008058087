// More chats at once than the swarm has sessions: a tracker on loopback, two real hosts of two sessions each splitting
// stories260K, and a burst of chats from clients of their own keys. The tracker must not route a host past its
// sessions between heartbeats, and a chat that finds every host full waits for a session instead of failing.
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { NodeIdentity } from '../identity/keys'
import { ClientToTracker, callRpc } from '../protocol'
import { STORIES_260K, scratchDir } from './models'
import { Host, type InProcessSwarm, startSwarm } from './programs'

const CHATS = 6
const TOKENS = 8
const SESSIONS_PER_HOST = 2

async function chat(client: SwarmClient, modelId: string, k: number): Promise<number[]> {
  const tokens: number[] = []
  const run = client.generate({
    modelId,
    prompt: `Once upon a time, a girl called Lily number ${k}`,
    maxTokens: TOKENS,
    stopAtEog: false,
    sampling: { temperature: 0 },
  })
  for await (const t of run) tokens.push(t.token)
  return tokens
}

describe(`a burst of chats over hosts of ${SESSIONS_PER_HOST} sessions`, () => {
  let swarm: InProcessSwarm
  let cleanup: () => Promise<void>
  const clients: SwarmClient[] = []

  beforeAll(async () => {
    const scratch = await scratchDir('neuron-concurrent-')
    cleanup = scratch.cleanup
    swarm = await startSwarm(scratch.dir, STORIES_260K, [])
    for (const blocks of [
      [0, 3],
      [3, 5],
    ] as const)
      await swarm.addHost(blocks, (options) => new Host({ ...options, maxSessions: SESSIONS_PER_HOST }))
    for (let k = 0; k < CHATS; k++) clients.push(await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate()))
  }, 120_000)
  afterAll(async () => {
    for (const c of clients) c.close()
    await swarm?.close()
    await cleanup?.()
  })

  it('a key planning in a loop that is refused does not make the hosts look full to others', async () => {
    const modelId = swarm.manifest.modelId
    const attacker = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    const plan = (client: SwarmClient | undefined, session: string) =>
      callRpc((client ?? attacker).tracker, ClientToTracker, 'route.plan', {
        modelId,
        maxTokens: 8,
        promptTokens: 4,
        exclude: [],
        session,
      })
    // The hosts idle and past their first probes, and a heartbeat since.
    await vi.waitFor(
      () =>
        expect(
          swarm.hosts.every(
            (h) =>
              swarm.tracker.checks.of(h.hostId).probesPassed >= 1 &&
              swarm.tracker.registry.get(h.hostId)?.state.activeSessions === 0,
          ),
        ).toBe(true),
      { timeout: 60_000 },
    )
    await new Promise((r) => setTimeout(r, 1_000))
    try {
      // Another client's session: one of the hosts' two sessions each, counted until their next heartbeat.
      const theirs = randomBytes(16).toString('hex')
      await plan(clients[1], theirs)
      // Refused after the planner picked hosts for it, again and again.
      for (let i = 0; i < 3 * SESSIONS_PER_HOST; i++)
        await expect(plan(attacker, theirs)).rejects.toMatchObject({ code: 'session_exists' })
      const route = await plan(clients[0], randomBytes(16).toString('hex'))
      expect(route.hops.length).toBeGreaterThan(0)
    } finally {
      attacker.close()
    }
  })

  it(`completes all ${CHATS} chats started at once, each with the tokens it has alone`, async () => {
    const modelId = swarm.manifest.modelId
    const solo: number[][] = []
    for (const [k, c] of clients.entries()) solo.push(await chat(c, modelId, k))
    const together = await Promise.all(clients.map((c, k) => chat(c, modelId, k)))
    for (const tokens of together) expect(tokens).toHaveLength(TOKENS)
    expect(together).toEqual(solo)
    // the prompts differ, and so do their stories: the check compares each chat with its own
    expect(new Set(solo.map((t) => t.join(','))).size).toBeGreaterThan(1)
  }, 120_000)
})
