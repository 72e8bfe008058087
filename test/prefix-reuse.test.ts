// Prefix reuse across sessions (issue 35 items 2 and 3): a client's new generation whose prompt begins as an ended
// session's did is routed to that session's hosts (prefix affinity), which start it from a copy of its cache (their
// prefix cache), so only the rest of the prompt is stepped and paid; its answer is a fresh session's, its receipts are
// priced from the fork's position, and its audit re-runs the earlier session's steps before its own. A real tracker
// and three hosts of stories260K on loopback, every hop audited.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { NodeIdentity } from '../identity/keys'
import { ClientToTracker, callRpc } from '../protocol'
import { drain } from './generations'
import { STORIES_260K, scratchDir } from './models'
import { type InProcessSwarm, startSwarm } from './programs'

let scratch: { dir: string; cleanup: () => Promise<void> }
let swarm: InProcessSwarm

beforeAll(async () => {
  scratch = await scratchDir('neuron-prefix-reuse-')
  swarm = await startSwarm(
    scratch.dir,
    STORIES_260K,
    [
      [0, 3],
      [3, 5],
      [3, 5],
    ],
    { checks: { probationProbes: 1, probeEveryMs: 3_600_000, auditRate: 1 } },
  )
}, 120_000)

afterAll(async () => {
  await swarm?.close()
  await scratch?.cleanup()
})

const SYSTEM =
  'You are a kind storyteller. You tell short stories about a little girl named Lily and her dog, who live in a ' +
  'small house near the park. Every story ends happily.'

describe('a generation that begins as an ended one did', () => {
  it('starts from the earlier session’s cache on its hosts and answers as a fresh session', async () => {
    const lines: string[] = []
    const client = (
      await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate(), (l) => lines.push(l))
    ).reusePrefixes()
    const plain = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    const modelId = swarm.manifest.modelId
    try {
      const tokenizer = await client.tokenizer(modelId)
      const system = tokenizer.encode(SYSTEM)
      expect(system.length).toBeGreaterThan(32)
      const ask = (q: string) => [...system, ...tokenizer.encode(` ${q}`).slice(1)]
      const first = await drain(client.generate({ modelId, prompt: ask('One day'), maxTokens: 6, stopAtEog: false }))
      expect(first.summary.cachedTokens).toBe(0)
      const prompt = ask('Lily went to the park')
      let shared = 0
      while (prompt[shared] === ask('One day')[shared]) shared++
      const second = await drain(client.generate({ modelId, prompt, maxTokens: 8, stopAtEog: false }))
      // a new session on the same hosts, which held the shared tokens: only the rest was stepped
      expect(second.summary.session).not.toBe(first.summary.session)
      const why = `the client's log:\n${lines.join('\n')}`
      expect(
        second.summary.route.map((h) => h.hostId),
        why,
      ).toEqual(first.summary.route.map((h) => h.hostId))
      expect(second.summary.cachedTokens, why).toBe(shared)
      const stepOne = second.summary.receipts.filter((r) => r.step === 1)
      expect(stepOne).toHaveLength(2)
      for (const r of stepOne) expect([r.position, r.tokens]).toEqual([shared, prompt.length - shared])
      // priced from the fork's position: every receipt pays
      const verdicts = (await client.submitReceipts(second.summary.session, second.summary.receipts)).verdicts
      expect(verdicts.filter((v) => !v.ok && v.code !== 'already_settled')).toEqual([])
      // greedy: what a client that reuses nothing gets for the whole prompt
      const fresh = await drain(plain.generate({ modelId, prompt, maxTokens: 8, stopAtEog: false }))
      expect(fresh.summary.cachedTokens).toBe(0)
      expect(second.tokens).toEqual(fresh.tokens)
      // every hop of both sessions audited (rate 1): the forked one re-ran the earlier one's steps first; all passed
      expect(await client.auditsSettled(), `the client's log:\n${lines.join('\n')}`).toEqual([])
      expect(lines.filter((l) => l.includes('not run'))).toEqual([])
    } finally {
      await client.close()
      await plain.close()
    }
  }, 180_000)

  it('is not routed as a fork of another key’s session', async () => {
    const owner = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    const other = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    const modelId = swarm.manifest.modelId
    try {
      const prompt = (await owner.tokenizer(modelId)).encode(SYSTEM)
      const ran = await drain(owner.generate({ modelId, prompt, maxTokens: 2, stopAtEog: false }))
      const fork = {
        session: ran.summary.session,
        position: 32,
        hops: ran.summary.route.map((h) => ({ hostId: h.hostId, blocks: h.blocks })),
      }
      const asked = { modelId, maxTokens: 64, promptTokens: 40, exclude: [], session: 'ab'.repeat(16), fork }
      const route = await callRpc(other.tracker, ClientToTracker, 'route.plan', asked)
      expect(route.hops.every((h) => h.ticket?.fork === undefined)).toBe(true)
      await callRpc(other.tracker, ClientToTracker, 'session.end', { session: asked.session })
      // the owner's own plan of the same fork is one
      const own = await callRpc(owner.tracker, ClientToTracker, 'route.plan', { ...asked, session: 'cd'.repeat(16) })
      expect(own.hops.map((h) => h.ticket?.fork)).toEqual(own.hops.map(() => ({ session: fork.session, position: 32 })))
      // planned again (as a wait for a free session does), it keeps the terms its first plan fixed: a fork
      const { fork: _asked, ...whole } = { ...asked, session: 'cd'.repeat(16) }
      await expect(callRpc(owner.tracker, ClientToTracker, 'route.plan', whole)).rejects.toMatchObject({
        code: 'prefix_gone',
      })
      await callRpc(owner.tracker, ClientToTracker, 'session.end', { session: 'cd'.repeat(16) })
    } finally {
      await owner.close()
      await other.close()
    }
  }, 120_000)
})
