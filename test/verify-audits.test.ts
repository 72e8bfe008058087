// Speculative verify steps are audited like decode steps: a verify step runs the last token and the drafts, the route
// keeps the rows the draft got right, and the next step runs on from them. The audit sends each step whole (its
// digest is the receipt's) with the rows kept, and the tracker re-runs the kept rows as one prefill and compares them
// with the step's commitment, cut to them. Before, verify steps were never picked. A real tracker on loopback, real
// hosts of stories260K, a damaged copy of it as the draft (so some drafts are refused and rows are cut), and a liar
// in the middle with two honest (slower) twins.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { NodeIdentity } from '../identity/keys'
import { auditedTwinSwarm } from './audited-swarm'
import { damagedCopy } from './draft-models'
import { LyingHost } from './lying-host'
import { STORIES_260K, scratchDir } from './models'
import type { InProcessSwarm } from './programs'

const PROMPT = [1, 403, 407, 125, 261, 10, 300]
const TOKENS = 24

let dir: { dir: string; cleanup: () => Promise<void> }
let swarm: InProcessSwarm
let draft = ''

beforeAll(async () => {
  dir = await scratchDir('neuron-verify-audits-')
  draft = await damagedCopy(STORIES_260K, join(dir.dir, 'damaged.gguf'), [1, 3])
  swarm = await auditedTwinSwarm(dir.dir, STORIES_260K)
}, 120_000)

afterAll(async () => {
  await swarm?.close()
  await dir?.cleanup()
})

async function chat(client: SwarmClient) {
  const routed = new Set<string>()
  const run = client.generate({
    modelId: swarm.manifest.modelId,
    prompt: PROMPT,
    maxTokens: TOKENS,
    stopAtEog: false,
    draft: { path: draft, k: 4 },
    onRoute: (hops) => {
      for (const h of hops) routed.add(h.hostId)
    },
  })
  let tokens = 0
  for (let next = await run.next(); ; next = await run.next()) {
    if (next.done) return { routed, tokens, speculation: next.value.speculation }
    tokens++
  }
}

describe('audits of speculative verify steps', () => {
  it('an honest speculative chat, some drafts refused, passes the audit of its middle hop', async () => {
    const log: string[] = []
    const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate(), (l) => log.push(l))
    try {
      const before = new Map(swarm.hosts.map((h) => [h.hostId, swarm.tracker.checks.of(h.hostId).auditsPassed]))
      const { routed, tokens, speculation } = await chat(client)
      expect(tokens).toBe(TOKENS)
      // verify steps ran, and the route cut rows the draft got wrong
      expect(speculation?.verifySteps).toBeGreaterThan(0)
      expect(speculation?.accepted).toBeLessThan(speculation?.drafted ?? 0)
      expect(await client.auditsSettled()).toEqual([])
      expect(log.filter((l) => l.includes('not run'))).toEqual([])
      const middle = swarm.hosts.filter((h) => routed.has(h.hostId) && h instanceof LyingHost)
      expect(middle).toHaveLength(1)
      const id = middle[0]?.hostId ?? ''
      expect(swarm.tracker.checks.of(id).auditsPassed).toBe((before.get(id) ?? 0) + 1)
    } finally {
      await client.close()
    }
  }, 120_000)

  it('a host lying on verify steps is banned by the audit of its session', async () => {
    const liar = (await swarm.addHost(
      [2, 4],
      (o) => new LyingHost(o, { lie: { kind: 'noise', size: 0.5 }, honestSessions: 2 }),
    )) as LyingHost
    const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    try {
      const { routed, speculation } = await chat(client)
      expect(routed.has(liar.hostId)).toBe(true)
      expect(speculation?.verifySteps).toBeGreaterThan(0)
      expect(await client.auditsSettled()).toEqual([liar.hostId])
      expect(swarm.tracker.checks.banned(liar.hostId)).toBe(true)
    } finally {
      await client.close()
    }
  }, 120_000)
})
