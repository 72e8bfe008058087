// Admission that costs what it blocks, against a real tracker and three real hosts of stories260K: A and B serve blocks
// [0, 3), C alone serves [3, 5), four sessions each. Each attack as measured before the fix: a key looping route.plan +
// session.end made every host look full for nothing; one key holding three sessions on C refused everyone else for the
// sessions' 10-minute life; failovers one client claimed sank an honest host's score under the planner's cut-off;
// four keys each opening one session on C and never stepping it refused everyone else until the opens lapsed (30 s).
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest'
import { planRoute } from '../client/grant-claim'
import { closeHops, openHops } from '../client/open-hops'
import { SwarmClient } from '../client/swarm-client'
import { NodeIdentity } from '../identity/keys'
import { ClientToTracker, callRpc, NeuronError } from '../protocol'
import { consumerAccount, hostAccount } from '../tracker/ledger/accounts'
import { STORIES_260K, scratchDir } from './models'
import { Host, type InProcessSwarm, QUIET_CHECKS, startSwarm } from './programs'

const SESSIONS = 4
const sid = () => randomBytes(16).toString('hex')
// No random probes or audits: the attacks' own traffic is all the hosts see.
const CHECKS = QUIET_CHECKS

/** A chat that has its first token and holds its session open (stepped once) until `release`. */
async function heldChat(client: SwarmClient, modelId: string) {
  const run = client.generate({
    modelId,
    prompt: 'Once upon a time',
    maxTokens: 32,
    stopAtEog: false,
    sampling: { temperature: 0 },
    waitForSessionMs: 0,
  })
  expect((await run.next()).done).toBe(false)
  return { release: () => run.return(undefined as never) }
}

/** A whole chat of a few tokens; rejects if it is not done within `withinMs`. */
async function chat(client: SwarmClient, modelId: string, withinMs: number): Promise<number> {
  const run = (async () => {
    let n = 0
    for await (const _ of client.generate({
      modelId,
      prompt: 'Once upon a time',
      maxTokens: 6,
      stopAtEog: false,
      sampling: { temperature: 0 },
    }))
      n++
    return n
  })()
  const late = new Promise<never>((_, reject) =>
    setTimeout(() => reject(new Error(`the chat was not done within ${withinMs} ms`)), withinMs).unref(),
  )
  return Promise.race([run, late])
}

describe(`admission that costs what it blocks`, () => {
  let swarm: InProcessSwarm
  const clients: SwarmClient[] = []
  let cleanup: () => Promise<void> = async () => {}
  const connect = async (identity = NodeIdentity.generate()) => {
    const c = await SwarmClient.connect(swarm.tracker.url, identity)
    clients.push(c)
    return c
  }
  beforeAll(async () => {
    const scratch = await scratchDir('neuron-admission-attacks-')
    swarm = await startSwarm(scratch.dir, STORIES_260K, [], { checks: CHECKS })
    for (const blocks of [
      [0, 3],
      [0, 3],
      [3, 5],
    ] as const)
      await swarm.addHost(blocks, (o) => new Host({ ...o, maxSessions: SESSIONS }))
    cleanup = async () => {
      for (const c of clients) c.close()
      await swarm.close()
      await scratch.cleanup()
    }
  }, 180_000)
  afterAll(() => cleanup())
  /** Each attack starts on an idle swarm: no session open or counted as routed at any host. */
  beforeEach(async () => {
    await vi.waitFor(
      () => {
        for (const h of swarm.hosts)
          expect(swarm.tracker.registry.get(h.hostId)).toMatchObject({
            routedSinceHeartbeat: 0,
            state: { activeSessions: 0 },
          })
      },
      { timeout: 20_000, interval: 100 },
    )
  }, 30_000)

  it("a key looping route.plan and session.end does not keep another key's chat from completing", async () => {
    const attacker = await connect()
    const victim = await connect()
    const modelId = swarm.manifest.modelId
    let flooding = true
    let plans = 0
    // four loops at once, as one key can run them
    const loop = async () => {
      while (flooding) {
        const session = sid()
        plans++
        await callRpc(attacker.tracker, ClientToTracker, 'route.plan', {
          modelId,
          maxTokens: 64,
          promptTokens: 8,
          exclude: [],
          session,
        }).catch(() => undefined)
        await callRpc(attacker.tracker, ClientToTracker, 'session.end', { session })
      }
    }
    const flood = Promise.all([loop(), loop(), loop(), loop()])
    try {
      await vi.waitFor(() => expect(plans).toBeGreaterThan(40), { timeout: 10_000 })
      // measured before the fix: 0 routes in 15 tries
      let routed = 0
      for (let k = 0; k < 15; k++) {
        const session = sid()
        await callRpc(victim.tracker, ClientToTracker, 'route.plan', {
          modelId,
          maxTokens: 16,
          promptTokens: 4,
          exclude: [],
          session,
        }).then(
          () => routed++,
          () => undefined,
        )
        await callRpc(victim.tracker, ClientToTracker, 'session.end', { session })
        await new Promise((resolve) => setTimeout(resolve, 100))
      }
      expect(routed).toBeGreaterThanOrEqual(12)
      expect(await chat(victim, modelId, 10_000)).toBe(6)
    } finally {
      flooding = false
      await flood
    }
  }, 60_000)

  it('a key has at most 8 plans outstanding; past them route.plan says to end one', async () => {
    const client = await connect()
    const modelId = swarm.manifest.modelId
    const sessions = Array.from({ length: 8 }, sid)
    const c = swarm.hosts[2]?.hostId ?? ''
    // C has four sessions: a plan never opened stops counting there within the grace (two beats here), its hold stays
    let plans = 0
    const plan = async (session: string) => {
      if (plans++ >= SESSIONS)
        await vi.waitFor(() => expect(swarm.tracker.registry.get(c)?.routedSinceHeartbeat).toBe(0), { timeout: 5_000 })
      return callRpc(client.tracker, ClientToTracker, 'route.plan', {
        modelId,
        maxTokens: 16,
        promptTokens: 4,
        exclude: [],
        session,
      })
    }
    for (const s of sessions) await plan(s)
    const ninth = sid()
    const refused = await plan(ninth).catch((e: unknown) => e)
    expect(refused).toBeInstanceOf(NeuronError)
    expect(refused).toMatchObject({ code: 'too_many_plans' })
    expect((refused as NeuronError).message).toMatch(/session\.end/)
    // a re-plan of an outstanding session (a failover) is no new plan
    await plan(sessions[0] ?? '')
    await callRpc(client.tracker, ClientToTracker, 'session.end', { session: sessions[0] ?? '' })
    await plan(ninth)
    for (const s of [...sessions.slice(1), ninth])
      await callRpc(client.tracker, ClientToTracker, 'session.end', { session: s })
  }, 60_000)

  it('a key squatting three of the only [3, 5) host’s sessions gives one up to a waiting key within seconds, and ' +
    'pays rent for the time it held them', async () => {
    const squatterKey = NodeIdentity.generate()
    const squatter = await connect(squatterKey)
    const bystander = await connect()
    const victim = await connect()
    const modelId = swarm.manifest.modelId
    const squatted = [
      await heldChat(squatter, modelId),
      await heldChat(squatter, modelId),
      await heldChat(squatter, modelId),
    ]
    const other = await heldChat(bystander, modelId)
    const account = await swarm.tracker.accounts.byPublicKey(squatterKey.publicKey)
    if (account === undefined) throw new Error('the squatter has no account')
    const c = swarm.hosts[2]?.hostId ?? ''
    await vi.waitFor(() => expect(swarm.tracker.registry.get(c)?.state.activeSessions).toBe(SESSIONS), {
      timeout: 10_000,
    })
    const started = Date.now()
    try {
      // bound: the host's idle time before it gives a squatted session up, a heartbeat, and the chat itself
      expect(await chat(victim, modelId, 25_000)).toBe(6)
      expect(Date.now() - started).toBeLessThan(25_000)
    } finally {
      for (const s of squatted) await s.release()
      await other.release()
    }
    // each session's rent, per minute started, from the route to session.end
    // C's settled account: receipts' earnings wait in escrow for a day, so what is there is rent
    await vi.waitFor(
      async () => expect(await swarm.tracker.store.ledger.balance(hostAccount(c))).toBeGreaterThanOrEqual(3),
      { timeout: 10_000 },
    )
    expect(await swarm.tracker.store.ledger.balance(consumerAccount(account.accountId))).toBeLessThan(10_000_000)
  }, 90_000)

  it('sessions opened on the only [3, 5) host and never stepped, one per key, give way to a waiting chat within ' +
    'seconds', async () => {
    const modelId = swarm.manifest.modelId
    const c = swarm.hosts[2]?.hostId ?? ''
    // four keys, one open each on every hop of a route: C is full, and no key holds more than another
    const opened = []
    for (let i = 0; i < SESSIONS; i++) {
      const squatter = await connect()
      const session = sid()
      const plan = { modelId, maxTokens: 24, promptTokens: 4, exclude: [], session }
      const route = await planRoute(squatter.tracker, squatter.hopOpener.identity, plan, () => {})
      const request = { modelId, prompt: [1], maxTokens: 20, sampling: { temperature: 0 } }
      opened.push({ session, hops: await openHops(squatter.hopOpener, route.hops, session, request, 24, true) })
    }
    await vi.waitFor(() => expect(swarm.tracker.registry.get(c)?.state.activeSessions).toBe(SESSIONS), {
      timeout: 10_000,
    })
    const victim = await connect()
    const started = Date.now()
    try {
      // bound: the host's grace for an open never stepped (5 s), a heartbeat, and the chat itself; the opens' own
      // lapse (30 s) is well past it
      expect(await chat(victim, modelId, 15_000)).toBe(6)
      expect(Date.now() - started).toBeLessThan(15_000)
    } finally {
      for (const o of opened) await closeHops(o.hops, o.session)
    }
  }, 60_000)

  it("failovers one client claims again and again leave the hosts' scores as they were", async () => {
    const griefer = await connect()
    const modelId = swarm.manifest.modelId
    const [a, b] = [swarm.hosts[0]?.hostId ?? '', swarm.hosts[1]?.hostId ?? '']
    const before = [swarm.tracker.reputation.score(a), swarm.tracker.reputation.score(b)]
    const session = sid()
    const route = await callRpc(griefer.tracker, ClientToTracker, 'route.plan', {
      modelId,
      maxTokens: 16,
      promptTokens: 4,
      exclude: [],
      session,
    })
    let current = route.hops[0]?.hostId ?? ''
    for (let k = 0; k < 30; k++) {
      const again = await callRpc(griefer.tracker, ClientToTracker, 'route.plan', {
        modelId,
        maxTokens: 16,
        promptTokens: 4,
        exclude: [current],
        span: [0, 3],
        failedHost: current,
        session,
      })
      current = again.hops[0]?.hostId ?? ''
    }
    await callRpc(griefer.tracker, ClientToTracker, 'session.end', { session })
    const after = [swarm.tracker.reputation.score(a), swarm.tracker.reputation.score(b)]
    expect(after[0]).toBeGreaterThanOrEqual((before[0] ?? 1) - 1e-9)
    expect(after[1]).toBeGreaterThanOrEqual((before[1] ?? 1) - 1e-9)
  }, 60_000)
})
