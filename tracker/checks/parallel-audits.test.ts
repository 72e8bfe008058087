// A session's audits (one per hop picked, run once the session is over, each comparing every step of it) run at once,
// not one after another, and a client keeps its key within the tracker's cap on audits in flight over all its
// sessions: past it they wait at the client instead of being refused (a refused audit is a session never checked). A
// real tracker on loopback, three real hosts (one hop each), a generated model, every hop picked (each decided by the
// host's recent probe, as blocks only one host serves are), each audit held for a round trip to a distant tracker.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../../client/swarm-client'
import { generateModel } from '../../gguf/generate'
import { NodeIdentity } from '../../identity/keys'
import { type AuditRequest, MAX_AUDITS_IN_FLIGHT } from '../../protocol'
import { scratchDir } from '../../test/models'
import { type InProcessSwarm, startSwarm } from '../../test/programs'

const SHAPE = { arch: 'llama', blocks: 6, embd: 64, heads: 4, kvHeads: 2, ff: 128, vocab: 320, type: 'q8_0' } as const
const PROMPT = [1, 17, 42, 99, 7, 64]
const TOKENS = 10
const AUDIT_ROUND_TRIP_MS = 30

let dir: { dir: string; cleanup: () => Promise<void> }
let swarm: InProcessSwarm
let client: SwarmClient
/** Audits the tracker is running now, per session and per key; the most seen at once; and those it refused. */
const running = {
  bySession: new Map<string, number>(),
  byKey: new Map<string, number>(),
  peakSession: 0,
  peakKey: 0,
  refused: 0,
  done: 0,
}

beforeAll(async () => {
  dir = await scratchDir('neuron-parallel-audits-')
  const model = join(dir.dir, 'model.gguf')
  await generateModel({ ...SHAPE, seed: 2, out: model })
  // out of probation after the join probe, no scheduled probe during the test, every hop audited
  const checks = { probationProbes: 1, probationProbeEveryMs: 3_600_000, probeEveryMs: 3_600_000, auditRate: 1 }
  swarm = await startSwarm(
    join(dir.dir, 'swarm'),
    model,
    [
      [0, 2],
      [2, 4],
      [4, 6],
    ],
    { checks },
  )
  const auditor = swarm.tracker.services.auditor
  const audit = auditor.audit.bind(auditor)
  const bump = (m: Map<string, number>, k: string, by: number) => {
    const n = (m.get(k) ?? 0) + by
    m.set(k, n)
    return n
  }
  auditor.audit = async (
    request: AuditRequest,
    requester: { nodeId: string; publicKey: string },
    limited?: boolean,
  ) => {
    running.peakSession = Math.max(running.peakSession, bump(running.bySession, request.session, 1))
    running.peakKey = Math.max(running.peakKey, bump(running.byKey, requester.publicKey, 1))
    try {
      // as far as a tracker over the internet: each audit takes a round trip, so the two chats' audits overlap
      await new Promise((resolve) => setTimeout(resolve, AUDIT_ROUND_TRIP_MS))
      return await audit(request, requester, limited)
    } catch (error) {
      if ((error as { code?: string }).code === 'rate_limited') running.refused++
      throw error
    } finally {
      bump(running.bySession, request.session, -1)
      bump(running.byKey, requester.publicKey, -1)
      running.done++
    }
  }
  client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
}, 120_000)
afterAll(async () => {
  client?.close()
  await swarm?.close()
  await dir?.cleanup()
})

async function chat(): Promise<number[]> {
  const tokens: number[] = []
  const run = client.generate({
    modelId: swarm.manifest.modelId,
    prompt: PROMPT,
    maxTokens: TOKENS,
    stopAtEog: false,
    sampling: { temperature: 0 },
  })
  for (let next = await run.next(); !next.done; next = await run.next()) tokens.push(next.value.token)
  return tokens
}

describe("a client's audits", () => {
  it("run a session's audits at once once it is over, one per hop, and keep two chats of one key within the " +
    "tracker's cap with none refused", async () => {
    const solo = await chat()
    expect(solo).toHaveLength(TOKENS)
    expect(await client.auditsSettled()).toEqual([])
    // the three hops of the session were audited once each, at once
    expect(running.done).toBe(3)
    expect(running.peakSession).toBeGreaterThanOrEqual(2)
    const before = running.done
    // two chats at once: six audits between them, four at most at the tracker
    const [a, b] = await Promise.all([chat(), chat()])
    expect(a).toEqual(solo)
    expect(b).toEqual(solo)
    expect(await client.auditsSettled()).toEqual([])
    expect(running.done - before).toBe(2 * 3)
    expect(running.peakKey).toBe(MAX_AUDITS_IN_FLIGHT)
    expect(running.refused).toBe(0)
    console.log(
      `audits at once: ${running.peakSession} in one session, ${running.peakKey} for the key; ${running.done} run, ` +
        `none refused`,
    )
  }, 120_000)
})
