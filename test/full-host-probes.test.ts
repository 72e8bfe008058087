// A full host is still checked: a tracker on loopback, one real host of 2 sessions serving all of stories260K, both
// sessions held by clients' chats. The tracker's probes reach the host in its reserved probe slots (PROBE_SLOTS), a
// client cannot open a session in them, and a host that refuses probes while full is routed no more.
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { WebSocketHopLink } from '../dataplane/hop-link'
import type { Host } from '../host/host'
import { NodeIdentity } from '../identity/keys'
import { signOpen } from '../identity/tickets'
import { ClientToTracker, callRpc, jsonFrame, type Ticket } from '../protocol'
import { AlwaysBusyHost, ProbeRefusingHost } from './lying-host'
import { STORIES_260K, scratchDir } from './models'
import { Host as HonestHost, type InProcessSwarm, QUIET_CHECKS, startSwarm } from './programs'

const SESSIONS = 2
const TOKENS = 6
// Probes run when a test asks (no random ones after the first), and no audits: the test's probes are the only ones.
const CHECKS = QUIET_CHECKS

/** A chat that has its first token and holds its session open until `finish` (which reads the rest) or `release`. */
async function heldChat(client: SwarmClient, modelId: string) {
  const run = client.generate({
    modelId,
    prompt: 'Once upon a time, a girl',
    maxTokens: TOKENS,
    stopAtEog: false,
    sampling: { temperature: 0 },
  })
  const first = await run.next()
  expect(first.done).toBe(false)
  return {
    async finish(): Promise<number> {
      let n = 1
      for (let r = await run.next(); !r.done; r = await run.next()) n++
      return n
    },
    release: () => run.return(undefined as never),
  }
}

/**
 * Until the tracker counts the host full (sessions at its last heartbeat plus those routed since): only then does
 * it open a refused probe again in the probe slots. A heartbeat counted before the chats opened can lag it a beat.
 */
async function trackerCountsFull(swarm: InProcessSwarm, hostId: string): Promise<void> {
  await vi.waitFor(
    () => {
      const h = swarm.tracker.registry.get(hostId)
      expect((h?.state.activeSessions ?? 0) + (h?.routedSinceHeartbeat ?? 0)).toBeGreaterThanOrEqual(SESSIONS)
    },
    { timeout: 30_000 },
  )
}

async function startOneHostSwarm(make: (options: ConstructorParameters<typeof HonestHost>[0]) => Host) {
  const scratch = await scratchDir('neuron-full-probes-')
  const swarm = await startSwarm(scratch.dir, STORIES_260K, [], { checks: CHECKS })
  const host = await swarm.addHost([0, 5], (o) => make({ ...o, maxSessions: SESSIONS }))
  const clients: SwarmClient[] = []
  for (let k = 0; k < SESSIONS + 1; k++)
    clients.push(await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate()))
  return {
    swarm,
    host,
    clients,
    async close() {
      for (const c of clients) c.close()
      await swarm.close()
      await scratch.cleanup()
    },
  }
}

describe(`a full host and the tracker's probes`, () => {
  let run: Awaited<ReturnType<typeof startOneHostSwarm>>
  let swarm: InProcessSwarm
  beforeAll(async () => {
    run = await startOneHostSwarm((o) => new HonestHost(o))
    swarm = run.swarm
  }, 120_000)
  afterAll(async () => {
    await run?.close()
  })

  it('a client holding a route ticket cannot open a session past the limit, in a probe slot or otherwise', async () => {
    const { host, clients } = run
    const attacker = NodeIdentity.generate()
    const channel = await SwarmClient.connect(swarm.tracker.url, attacker)
    const session = randomBytes(16).toString('hex')
    try {
      // a ticket while the host is free; then the host's sessions are taken by others' chats
      const route = await callRpc(channel.tracker, ClientToTracker, 'route.plan', {
        modelId: swarm.manifest.modelId,
        maxTokens: 8,
        promptTokens: 4,
        exclude: [],
        session,
      })
      const hop = route.hops[0]
      if (hop?.ticket === undefined || hop.endpoint === null) throw new Error('route.plan gave no ticketed hop')
      await vi.waitFor(() => expect(swarm.tracker.registry.get(host.hostId)?.routedSinceHeartbeat).toBe(0), {
        timeout: 30_000,
      })
      const held = [
        await heldChat(clients[0] as SwarmClient, swarm.manifest.modelId),
        await heldChat(clients[1] as SwarmClient, swarm.manifest.modelId),
      ]
      expect(host.activeSessions).toBe(SESSIONS)
      const link = await WebSocketHopLink.connect(host.hostId, hop.endpoint)
      const open = (ticket: Ticket) =>
        link.request(
          jsonFrame('open', session, 0, {
            modelId: swarm.manifest.modelId,
            blocks: hop.blocks,
            maxTokens: 8,
            ticket,
            signature: signOpen(attacker, ticket, { blocks: hop.blocks, maxTokens: 8 }),
          }),
        )
      try {
        await expect(open(hop.ticket)).rejects.toMatchObject({ code: 'busy' })
        await expect(open({ ...hop.ticket, probe: true })).rejects.toMatchObject({ code: 'bad_ticket' })
        expect(host.activeSessions).toBe(SESSIONS)
      } finally {
        link.close()
      }
      for (const h of held) expect(await h.finish()).toBe(TOKENS)
    } finally {
      channel.close()
    }
  }, 120_000)

  it('a host with all its sessions taken answers probe after probe, stays routable, and its chats go on', async () => {
    const { host, clients } = run
    const { checks } = swarm.tracker
    const held = [
      await heldChat(clients[0] as SwarmClient, swarm.manifest.modelId),
      await heldChat(clients[1] as SwarmClient, swarm.manifest.modelId),
    ]
    expect(host.activeSessions).toBe(SESSIONS)
    await trackerCountsFull(swarm, host.hostId)
    const passed = checks.of(host.hostId).probesPassed
    // more probes in a row than the inconclusive ones that unroute a host
    for (let i = 0; i < 4; i++)
      expect(await checks.probeNow(host.hostId)).toMatchObject({ passed: true, inconclusive: false })
    expect(checks.of(host.hostId).probesPassed).toBe(passed + 4)
    expect(checks.eligible(host.hostId)).toBe(true)
    // the probes held no session of the host's own
    expect(host.activeSessions).toBe(SESSIONS)
    for (const h of held) expect(await h.finish()).toBe(TOKENS)
    // and a new chat is routed to it
    const next = await heldChat(clients[2] as SwarmClient, swarm.manifest.modelId)
    expect(await next.finish()).toBe(TOKENS)
  }, 120_000)
})

describe(`a full host that refuses the tracker's probes`, () => {
  let run: Awaited<ReturnType<typeof startOneHostSwarm>>
  beforeAll(async () => {
    run = await startOneHostSwarm((o) => new ProbeRefusingHost(o))
  }, 120_000)
  afterAll(async () => {
    await run?.close()
  })

  it('is routed no more once it has refused three probes while its sessions are taken, and again once one ' +
    'passes', async () => {
    const { swarm, clients } = run
    const host = run.host as ProbeRefusingHost
    const { checks } = swarm.tracker
    expect(checks.eligible(host.hostId)).toBe(true)
    const held = [
      await heldChat(clients[0] as SwarmClient, swarm.manifest.modelId),
      await heldChat(clients[1] as SwarmClient, swarm.manifest.modelId),
    ]
    expect(host.activeSessions).toBe(SESSIONS)
    await trackerCountsFull(swarm, host.hostId)
    for (let i = 0; i < 3; i++) {
      const outcome = await checks.probeNow(host.hostId)
      expect(outcome).toMatchObject({ passed: false, inconclusive: true })
      expect(outcome.reason).toMatch(/keeps no slot for probes/)
    }
    expect(host.refused).toBe(3)
    expect(checks.eligible(host.hostId)).toBe(false)
    expect(checks.verifiedKey(host.hostId)).toBeNull()
    // unrouted, not banned: its chats finish, and once free it passes a probe and is routed again
    for (const h of held) expect(await h.finish()).toBe(TOKENS)
    expect(checks.banned(host.hostId)).toBe(false)
    await vi.waitFor(() => expect(host.activeSessions).toBe(0), { timeout: 30_000 })
    expect(await checks.probeNow(host.hostId)).toMatchObject({ passed: true })
    expect(checks.eligible(host.hostId)).toBe(true)
  }, 120_000)
})

describe(`a host that says busy with room to spare`, () => {
  let run: Awaited<ReturnType<typeof startOneHostSwarm>>
  beforeAll(async () => {
    run = await startOneHostSwarm((o) => new AlwaysBusyHost(o))
  }, 120_000)
  afterAll(async () => {
    await run?.close()
  })

  it('is never offered the probe slots: each refused probe counts, and it is routed no more', async () => {
    const { swarm } = run
    const host = run.host as AlwaysBusyHost
    const { checks } = swarm.tracker
    // its first probe may still run under load when its start returns
    await vi.waitFor(() => expect(checks.eligible(host.hostId)).toBe(true), { timeout: 30_000 })
    host.busy = true
    expect(host.activeSessions).toBe(0)
    const before = host.refused
    for (let i = 0; i < 3; i++) {
      const outcome = await checks.probeNow(host.hostId)
      expect(outcome).toMatchObject({ passed: false, inconclusive: true })
    }
    // one open per probe: none came back marked probe, since the tracker does not count it full
    expect(host.refused - before).toBe(3)
    expect(checks.eligible(host.hostId)).toBe(false)
    expect(checks.banned(host.hostId)).toBe(false)
  }, 120_000)

  it('is probed again within seconds once unrouted, not at its next random probe (an hour away here), and routed ' +
    'again once it answers', async () => {
    const { swarm } = run
    const host = run.host as AlwaysBusyHost
    const { checks } = swarm.tracker
    expect(checks.eligible(host.hostId)).toBe(false)
    const refused = host.refused
    host.quiet = true
    host.busy = false
    // no probe asked by the test: the tracker's own retry (RETRY_MS, 5 s) finds it answering
    await vi.waitFor(() => expect(checks.eligible(host.hostId)).toBe(true), { timeout: 30_000, interval: 250 })
    expect(host.refused).toBe(refused)
    expect(checks.banned(host.hostId)).toBe(false)
    host.quiet = false
  }, 120_000)
})
