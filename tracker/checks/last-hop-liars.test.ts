// Last hops that lie past a session's first steps, where a known-answer probe (three steps) never looks: the audit
// re-runs the session on another host of the last block with the sampling every receipt commits to, and the token
// drawn must be the same. A real tracker on loopback, real hosts, a generated model.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../../client/swarm-client'
import { generateModel } from '../../gguf/generate'
import type { Host } from '../../host/host'
import { NodeIdentity } from '../../identity/keys'
import type { SamplingParams } from '../../protocol'
import { routedChat } from '../../test/audited-swarm'
import { LyingHost, type LyingOptions } from '../../test/lying-host'
import { scratchDir } from '../../test/models'
import { type InProcessSwarm, startSwarm } from '../../test/programs'

const SHAPE = { arch: 'llama', blocks: 5, embd: 64, heads: 4, kvHeads: 2, ff: 128, vocab: 320, type: 'q8_0' } as const
const PROMPT = [1, 17, 42, 99, 7, 64]
const TOKENS = 10
/** Steps routed through a liar before it must be banned. */
const CAUGHT_WITHIN = 100
/** Logits of zeros past step 3 (the pass skipped): token 0 when greedy, any token alike when sampled. */
const LIE: LyingOptions = { lie: { kind: 'zeros' }, honestSteps: 3 }
const SLOW: LyingOptions = { lie: { kind: 'slow', factor: 1, delayMs: 15 } }

let dir: { dir: string; cleanup: () => Promise<void> }
let swarm: InProcessSwarm
const clients: SwarmClient[] = []

async function chat(client: SwarmClient, sampling: SamplingParams): Promise<string[]> {
  const request = { modelId: swarm.manifest.modelId, prompt: PROMPT, maxTokens: TOKENS, sampling }
  return (await routedChat(client, request)).map((h) => h.hostId)
}

/** Chats of `clients` in turn until `hostId` is banned or CAUGHT_WITHIN steps went through it; the steps. */
async function chatUntilBanned(hostId: string, sampling: SamplingParams, keys = 1): Promise<number> {
  let steps = 0
  for (let i = 0; i < 60 && steps <= CAUGHT_WITHIN && !swarm.tracker.checks.banned(hostId); i++) {
    if ((await chat(clients[i % keys] as SwarmClient, sampling)).includes(hostId)) steps += TOKENS
    // the audit runs once the session is over, in the background
    await clients[i % keys]?.auditsSettled()
  }
  return steps
}

beforeAll(async () => {
  dir = await scratchDir('neuron-last-hop-liars-')
  const model = join(dir.dir, 'model.gguf')
  await generateModel({ ...SHAPE, seed: 1, out: model })
  // Out of probation after one probe, no scheduled probe during the test, every session audited.
  swarm = await startSwarm(dir.dir, model, [], {
    checks: { probationProbes: 1, probeEveryMs: 3_600_000, auditRate: 1 },
  })
  await swarm.addHost([0, 4])
  for (let i = 0; i < 3; i++) clients.push(await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate()))
}, 120_000)

afterAll(async () => {
  for (const c of clients) c.close()
  await swarm?.close()
  await dir?.cleanup()
})

describe('a last hop lying past step 3', () => {
  it(`the only host of the last block, picking greedy tokens from logits it never computed past step 3, is banned ` +
    `within ` +
    `${CAUGHT_WITHIN} steps: its own re-run of the session draws otherwise`, async () => {
    const liar = (await swarm.addHost([4, 5], (o) => new LyingHost(o, LIE))) as LyingHost
    const steps = await chatUntilBanned(liar.hostId, { temperature: 0 })
    const checks = swarm.tracker.checks.of(liar.hostId)
    console.log(`sole last hop, greedy: banned after ${steps} steps (${liar.lies} lies told): ${checks.ban?.reason}`)
    expect(checks.ban?.reason).toMatch(/answered step \d+'s token on blocks \[4, 5\) two ways/)
    expect(steps).toBeLessThanOrEqual(CAUGHT_WITHIN)
    expect(checks.probesFailed).toBe(0)
  }, 300_000)

  it('two honest hosts of the last block agree with each other on every greedy and sampled session: no audit ' +
    'fails', async () => {
    // the liar is banned: these two are the only hosts of [4, 5), each the other's twin
    const twins: Host[] = [
      await swarm.addHost([4, 5], (o) => new LyingHost(o, SLOW)),
      await swarm.addHost([4, 5], (o) => new LyingHost(o, SLOW)),
    ]
    for (let i = 0; i < 6; i++) {
      await chat(clients[i % 3] as SwarmClient, i % 2 === 0 ? { temperature: 0 } : { temperature: 0.9, seed: i })
      await clients[i % 3]?.auditsSettled()
    }
    for (const twin of twins) {
      const checks = swarm.tracker.checks.of(twin.hostId)
      expect(checks.auditsFailed).toBe(0)
      expect(swarm.tracker.checks.banned(twin.hostId)).toBe(false)
    }
    const passed = twins.reduce((n, t) => n + swarm.tracker.checks.of(t.hostId).auditsPassed, 0)
    console.log(`honest last hops: ${passed} audits passed, none failed`)
    expect(passed).toBeGreaterThanOrEqual(6)
  }, 300_000)

  it(`one of three hosts of the last block, drawing sampled tokens from logits it never computed past step 3, is ` +
    `outvoted by ` +
    `the other two and banned once three clients' audits found it`, async () => {
    const liar = (await swarm.addHost([4, 5], (o) => new LyingHost(o, LIE))) as LyingHost
    const steps = await chatUntilBanned(liar.hostId, { temperature: 0.9, seed: 7 }, 3)
    const checks = swarm.tracker.checks.of(liar.hostId)
    console.log(`one of three, sampled: banned after ${steps} steps (${liar.lies} lies told): ${checks.ban?.reason}`)
    expect(checks.ban?.reason).toMatch(
      /failed an audit of real steps on blocks \[4, 5\).*outvoted in audits asked by 3/,
    )
    expect(steps).toBeLessThanOrEqual(CAUGHT_WITHIN)
  }, 300_000)
})
