// A swarm for audit tests: honest hosts of [0, 2) and [4, 5), and two honest but slower hosts of [2, 4), so a liar
// added on [2, 4) is the one routed and they are there to re-run its steps. Out of probation after one probe, no
// scheduled probe during the test, every hop of every session audited.
import type { SwarmClient } from '../client/swarm-client'
import type { RouteHop, SamplingParams } from '../protocol'
import { LyingHost, type LyingOptions } from './lying-host'
import { type InProcessSwarm, startSwarm } from './programs'

const SLOW: LyingOptions = { lie: { kind: 'slow', factor: 1, delayMs: 15 } }

export async function auditedTwinSwarm(dir: string, model: string): Promise<InProcessSwarm> {
  const swarm = await startSwarm(dir, model, [], {
    checks: { probationProbes: 1, probeEveryMs: 3_600_000, auditRate: 1 },
  })
  await swarm.addHost([0, 2])
  await swarm.addHost([4, 5])
  await swarm.addHost([2, 4], (o) => new LyingHost(o, SLOW))
  await swarm.addHost([2, 4], (o) => new LyingHost(o, SLOW))
  return swarm
}

/**
 * One chat of `client` that may end early (a liar banned mid-chat, the only host of its span: no route left); the
 * hops it was routed through.
 */
export async function routedChat(
  client: SwarmClient,
  request: { modelId: string; prompt: number[]; maxTokens: number; sampling: SamplingParams },
): Promise<RouteHop[]> {
  const hops: RouteHop[] = []
  const run = client.generate({ ...request, stopAtEog: false, onRoute: (route) => hops.push(...route) })
  try {
    for (let next = await run.next(); !next.done; next = await run.next());
  } catch {
    // banned mid-chat: the chat ends without a route
  }
  return hops
}
