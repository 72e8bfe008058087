// Sole hosts that lie the same way to every key, on inputs no probe uses: they agree with their own re-runs, so only
// another run of the same blocks tells. The tracker re-runs blocks no second host serves itself (host/reference-
// reruns.ts, as `neuron tracker --rerun-dir` starts it), and routes say so. A real tracker on loopback, real hosts, a
// generated model; the tracker fetches the span's artifacts from the swarm over BitTorrent like any host.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../../client/swarm-client'
import { generateModel } from '../../gguf/generate'
import { referenceReruns } from '../../host/reference-reruns'
import { NodeIdentity } from '../../identity/keys'
import type { RouteHop, SamplingParams } from '../../protocol'
import { routedChat } from '../../test/audited-swarm'
import { LyingHost, type LyingOptions } from '../../test/lying-host'
import { scratchDir } from '../../test/models'
import { type InProcessSwarm, startSwarm } from '../../test/programs'

const SHAPE = { arch: 'llama', blocks: 5, embd: 64, heads: 4, kvHeads: 2, ff: 128, vocab: 320, type: 'q8_0' } as const
const PROMPT = [1, 17, 42, 99, 7, 64]
const TOKENS = 10
/** Steps routed through a liar before it must be banned. */
const CAUGHT_WITHIN = 100
/** Honest for its speed test and its probation probe, then zeros to everyone, its own re-runs included. */
const SAME_TO_ALL: LyingOptions = { lie: { kind: 'zeros' }, honestSessions: 2 }

let dir: { dir: string; cleanup: () => Promise<void> }
let swarm: InProcessSwarm
let client: SwarmClient

/** One chat, its audits run once it is over; the route's hops. */
async function chat(sampling: SamplingParams = {}): Promise<RouteHop[]> {
  const hops = await routedChat(client, {
    modelId: swarm.manifest.modelId,
    prompt: PROMPT,
    maxTokens: TOKENS,
    sampling,
  })
  await client.auditsSettled()
  return hops
}

async function chatUntilBanned(hostId: string): Promise<{ steps: number; hops: RouteHop[] }> {
  let steps = 0
  let hops: RouteHop[] = []
  for (let i = 0; i < 40 && steps <= CAUGHT_WITHIN && !swarm.tracker.checks.banned(hostId); i++) {
    const route = await chat()
    if (route.some((h) => h.hostId === hostId)) {
      steps += TOKENS
      hops = route
    }
  }
  return { steps, hops }
}

beforeAll(async () => {
  dir = await scratchDir('neuron-own-reruns-')
  const model = join(dir.dir, 'model.gguf')
  await generateModel({ ...SHAPE, seed: 1, out: model })
  // Out of probation after one probe, no scheduled probe during the test, every session audited.
  swarm = await startSwarm(dir.dir, model, [], {
    checks: { probationProbes: 1, probeEveryMs: 3_600_000, auditRate: 1 },
    ownReruns: referenceReruns({ dataDir: join(dir.dir, 'reruns') }),
  })
  await swarm.addHost([0, 2])
  client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
}, 120_000)

afterAll(async () => {
  client?.close()
  await swarm?.close()
  await dir?.cleanup()
})

describe("the tracker's own re-runs of blocks only one host serves", () => {
  it('an honest sole host of the middle and of the last blocks passes every audit, and the route says the tracker ' +
    'audits them', async () => {
    const middle = await swarm.addHost([2, 4])
    const last = await swarm.addHost([4, 5])
    let hops: RouteHop[] = []
    for (let i = 0; i < 8; i++) hops = await chat(i % 2 === 0 ? {} : { temperature: 0.9, seed: i })
    expect(hops.map((h) => h.auditedBy)).toEqual(['tracker', 'tracker', 'tracker'])
    const checks = [middle, last].map((h) => swarm.tracker.checks.of(h.hostId))
    console.log(`honest sole hosts: ${checks.map((c) => c.auditsPassed).join(' and ')} audits passed`)
    for (const c of checks) expect(c.auditsFailed).toBe(0)
    // the span takes a moment to fetch and load: the first sessions' audits fall back to the host's own re-run
    expect(checks[0]?.auditsPassed).toBeGreaterThanOrEqual(4)
    expect(checks[1]?.auditsPassed).toBeGreaterThanOrEqual(4)
    await middle.stop(500)
    await last.stop(500)
  }, 300_000)

  it(`the only host of its blocks, answering zeros to every key (its own re-runs too) past its probe, is banned ` +
    `within ${CAUGHT_WITHIN} steps by the tracker's own re-run`, async () => {
    const last = await swarm.addHost([4, 5])
    const liar = (await swarm.addHost([2, 4], (o) => new LyingHost(o, SAME_TO_ALL))) as LyingHost
    const { steps, hops } = await chatUntilBanned(liar.hostId)
    await last.stop(500)
    const checks = swarm.tracker.checks.of(liar.hostId)
    console.log(`sole host, zeros to all: banned after ${steps} steps (${liar.lies} lies told): ${checks.ban?.reason}`)
    expect(hops.find((h) => h.hostId === liar.hostId)?.auditedBy).toBe('tracker')
    expect(checks.ban?.reason).toMatch(/failed an audit of all \d+ steps on blocks \[2, 4\).*tracker's own re-run/)
    expect(steps).toBeLessThanOrEqual(CAUGHT_WITHIN)
    expect(checks.probesFailed).toBe(0)
  }, 300_000)

  it(`the only host of the last block, picking tokens from logits of zeros for every key past its probe, is ` +
    `banned within ${CAUGHT_WITHIN} steps by the tracker's own re-run`, async () => {
    await swarm.addHost([2, 4])
    const liar = (await swarm.addHost([4, 5], (o) => new LyingHost(o, SAME_TO_ALL))) as LyingHost
    const { steps } = await chatUntilBanned(liar.hostId)
    const checks = swarm.tracker.checks.of(liar.hostId)
    console.log(`sole last hop, zeros to all: banned after ${steps} steps: ${checks.ban?.reason}`)
    expect(checks.ban?.reason).toMatch(/failed an audit of step \d+'s token on blocks \[4, 5\).*tracker's own re-run/)
    expect(steps).toBeLessThanOrEqual(CAUGHT_WITHIN)
    expect(checks.probesFailed).toBe(0)
  }, 300_000)

  it('a span past the budget is not re-run by the tracker (a route marks it unaudited, as before)', () => {
    const reruns = referenceReruns({ dataDir: join(dir.dir, 'small'), maxBytes: 1024 })({
      files: (modelId) => swarm.tracker.catalog.files(modelId),
      announceUrl: () => undefined,
      trackerKey: swarm.tracker.identity.publicKey,
      hostId: swarm.tracker.identity.id,
      log: () => {},
    })
    expect(reruns.serves(swarm.manifest.modelId, [2, 4])).toBe(false)
    expect(reruns.serves('no-such-model', [0, 1])).toBe(false)
  })
})
