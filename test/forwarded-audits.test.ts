// Steps forwarded host to host are audited like client-relayed ones: the client never sees them, so once the session
// is over it fetches what the picked hop was forwarded (from the hop before it) and what it forwarded on (from the hop
// itself), each checked against the digests their receipts sign, and the tracker re-runs them as one prefill. Before,
// a forwarded hop was never audited (its inputs were placeholders the audit left out). A real tracker on loopback,
// real hosts of a generated model, a liar in the middle of a hop-to-hop route with two honest (slower) twins.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { generateModel } from '../gguf/generate'
import { NodeIdentity } from '../identity/keys'
import { auditedTwinSwarm } from './audited-swarm'
import { LyingHost } from './lying-host'
import { scratchDir } from './models'
import type { InProcessSwarm } from './programs'

const SHAPE = { arch: 'llama', blocks: 5, embd: 64, heads: 4, kvHeads: 2, ff: 128, vocab: 320, type: 'q8_0' } as const
const PROMPT = [1, 17, 42, 99, 7, 64]

let dir: { dir: string; cleanup: () => Promise<void> }
let swarm: InProcessSwarm

beforeAll(async () => {
  dir = await scratchDir('neuron-forwarded-audits-')
  const model = join(dir.dir, 'model.gguf')
  await generateModel({ ...SHAPE, seed: 3, out: model })
  swarm = await auditedTwinSwarm(dir.dir, model)
}, 120_000)

afterAll(async () => {
  await swarm?.close()
  await dir?.cleanup()
})

async function chat(client: SwarmClient) {
  const routed = new Set<string>()
  const tokens: number[] = []
  const run = client.generate({
    modelId: swarm.manifest.modelId,
    prompt: PROMPT,
    maxTokens: 10,
    stopAtEog: false,
    forwarding: 'hop-to-hop',
    onRoute: (hops) => {
      for (const h of hops) routed.add(h.hostId)
    },
  })
  for (let next = await run.next(); !next.done; next = await run.next()) tokens.push(next.value.token)
  return { routed, tokens }
}

describe('audits of forwarded steps', () => {
  it('an honest hop-to-hop chat is audited on every hop and nobody is found lying', async () => {
    const log: string[] = []
    const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate(), (l) => log.push(l))
    try {
      const before = new Map(swarm.hosts.map((h) => [h.hostId, swarm.tracker.checks.of(h.hostId).auditsPassed]))
      const { tokens, routed } = await chat(client)
      expect(tokens).toHaveLength(10)
      expect(await client.auditsSettled()).toEqual([])
      // every hop's audit ran (none logged as not run): the middle hop, which two twins can re-run, passed
      expect(log.filter((l) => l.includes('not run'))).toEqual([])
      const middle = swarm.hosts.filter((h) => routed.has(h.hostId) && h instanceof LyingHost)
      expect(middle).toHaveLength(1)
      const id = middle[0]?.hostId ?? ''
      expect(swarm.tracker.checks.of(id).auditsPassed).toBe((before.get(id) ?? 0) + 1)
      expect(swarm.hosts.every((h) => !swarm.tracker.checks.banned(h.hostId))).toBe(true)
    } finally {
      await client.close()
    }
  }, 120_000)

  it('a host lying on steps forwarded to it and on from it is banned by the audit of its session', async () => {
    // the fastest host of [2, 4): it passes its probe, then adds noise to what it forwards
    const liar = (await swarm.addHost(
      [2, 4],
      (o) => new LyingHost(o, { lie: { kind: 'noise', size: 0.5 }, honestSessions: 2 }),
    )) as LyingHost
    const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    try {
      const { routed } = await chat(client)
      expect(routed.has(liar.hostId)).toBe(true)
      expect(liar.lies).toBeGreaterThan(0)
      expect(await client.auditsSettled()).toEqual([liar.hostId])
      expect(swarm.tracker.checks.banned(liar.hostId)).toBe(true)
      // the next chat goes around it, through an honest twin
      const after = await chat(client)
      expect(after.routed.has(liar.hostId)).toBe(false)
    } finally {
      await client.close()
    }
  }, 120_000)
})
