// Audits no other host can re-run (here: the only host, serving every block, so also the last hop) are decided
// by known-answer probes of the host; a probe it passed within auditProbeReuseMs stands for a new one, so the audits
// of chats do not each cost the host a probe. A real tracker on loopback, a real host, a generated model.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../../client/swarm-client'
import { generateModel } from '../../gguf/generate'
import { NodeIdentity } from '../../identity/keys'
import { scratchDir } from '../../test/models'
import { startSwarm } from '../../test/programs'

const SHAPE = { arch: 'llama', blocks: 5, embd: 64, heads: 4, kvHeads: 2, ff: 128, vocab: 320, type: 'q8_0' } as const
const PROMPT = [1, 17, 42, 99, 7, 64]
const TOKENS = 8

let dir: { dir: string; cleanup: () => Promise<void> }
let model = ''
beforeAll(async () => {
  dir = await scratchDir('neuron-probe-reuse-')
  model = join(dir.dir, 'model.gguf')
  await generateModel({ ...SHAPE, seed: 1, out: model })
})
afterAll(async () => {
  await dir?.cleanup()
})

/**
 * A greedy chat of TOKENS through a swarm of one host, every step
 * audited; the host's probes before and after, and the tokens.
 */
async function auditedChat(name: string, auditProbeReuseMs: number) {
  // out of probation after its first probe, no scheduled probe during the test: every probe after it is an audit's
  const checks = {
    probationProbes: 1,
    probationProbeEveryMs: 3_600_000,
    probeEveryMs: 3_600_000,
    auditRate: 1,
    auditProbeReuseMs,
  }
  const swarm = await startSwarm(join(dir.dir, name), model, [[0, SHAPE.blocks]], { checks })
  const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
  try {
    const hostId = swarm.hosts[0]?.hostId ?? ''
    const before = swarm.tracker.checks.of(hostId).probesPassed
    const tokens: number[] = []
    let audits: number[] = []
    const run = client.generate({
      modelId: swarm.manifest.modelId,
      prompt: PROMPT,
      maxTokens: TOKENS,
      stopAtEog: false,
      onRoute: (hops) => {
        audits = hops.map((h) => h.audit ?? 0)
      },
    })
    for (let next = await run.next(); !next.done; next = await run.next()) tokens.push(next.value.token)
    // the session's audit runs once it is over
    await client.auditsSettled()
    return {
      tokens,
      audits,
      before,
      after: swarm.tracker.checks.of(hostId).probesPassed,
      banned: swarm.tracker.checks.banned(hostId),
    }
  } finally {
    client.close()
    await swarm.close()
  }
}

describe('audits decided by a recent probe', () => {
  it('a chat through its only host, picked for an audit at every step, is audited without a new probe while the last ' +
    'one is recent, and with one without reuse', async () => {
    const reused = await auditedChat('reuse', 60_000)
    const fresh = await auditedChat('fresh', 0)
    expect(reused.audits).toEqual([1])
    expect(fresh.audits).toEqual([1])
    // the honest host's greedy tokens either way, and never banned
    expect(reused.tokens).toHaveLength(TOKENS)
    expect(fresh.tokens).toEqual(reused.tokens)
    expect(reused.banned || fresh.banned).toBe(false)
    // its join probe (under a minute ago) decided every audit; without reuse, audits probed it again
    expect(reused.after).toBe(reused.before)
    expect(fresh.after).toBeGreaterThan(fresh.before)
    console.log(
      `probes for the audit of ${TOKENS} steps: ${reused.after - reused.before} with reuse, ` +
        `${fresh.after - fresh.before} without`,
    )
  }, 120_000)
})
