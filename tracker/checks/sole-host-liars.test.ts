// Liars that know what a probe looks like: honest on a session's first steps (a known-answer probe is three), or
// honest with every key but one. Known-answer probes never see them lie, so an audit of a real step must: the host
// re-runs the step in a session from a key it cannot link to the tracker, and two answers to the same inputs are
// its own doing. A real tracker on loopback, real hosts, a generated model; the liar is the only host of its span
// (nobody to compare it with), then one of three hosts of it (outvoted, but a probe it passes clears it).
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../../client/swarm-client'
import { generateModel } from '../../gguf/generate'
import type { Host } from '../../host/host'
import { NodeIdentity } from '../../identity/keys'
import { LyingHost, type LyingOptions } from '../../test/lying-host'
import { scratchDir } from '../../test/models'
import { type InProcessSwarm, startSwarm } from '../../test/programs'

const SHAPE = { arch: 'llama', blocks: 5, embd: 64, heads: 4, kvHeads: 2, ff: 128, vocab: 320, type: 'q8_0' } as const
const PROMPT = [1, 17, 42, 99, 7, 64]
const TOKENS = 10
/** Steps routed through a liar before it must be banned (the bound). */
const CAUGHT_WITHIN = 100

let dir: { dir: string; cleanup: () => Promise<void> }
let swarm: InProcessSwarm
const victim = NodeIdentity.generate()
let victimClient: SwarmClient
let bystander: SwarmClient

/**
 * Chats of `client` until the host is banned or CAUGHT_WITHIN
 * steps went through it; the steps it served, and the chats.
 */
async function chatUntilBanned(client: SwarmClient, hostId: string) {
  let steps = 0
  let chats = 0
  for (; chats < 40 && steps <= CAUGHT_WITHIN && !swarm.tracker.checks.banned(hostId); chats++) {
    let through = false
    const run = client.generate({
      modelId: swarm.manifest.modelId,
      prompt: PROMPT,
      maxTokens: TOKENS,
      stopAtEog: false,
      onRoute: (hops) => {
        through = hops.some((h) => h.hostId === hostId)
      },
    })
    try {
      for (let next = await run.next(); !next.done; next = await run.next()) if (through) steps++
    } catch (error) {
      // the liar banned mid-chat, and it was the only host of its span: the chat ends with no route
      if (!swarm.tracker.checks.banned(hostId)) throw error
    }
    // The chat's audits run after it, off its critical path; a user's next chat comes seconds later, and by then they
    // are done. Waiting for them here counts the steps served before the audits that ban, not how many more chats a
    // loaded machine fits in while an audit's re-runs wait for a core (CI once counted 110).
    await client.auditsSettled()
  }
  return { steps, chats }
}

/**
 * Chats of `client` that must all complete; the hosts they were
 * routed through, and whether the route marked each unaudited.
 */
async function chats(client: SwarmClient, count: number): Promise<Map<string, boolean>> {
  const routed = new Map<string, boolean>()
  for (let i = 0; i < count; i++) {
    const run = client.generate({
      modelId: swarm.manifest.modelId,
      prompt: PROMPT,
      maxTokens: TOKENS,
      stopAtEog: false,
      onRoute: (hops) => {
        for (const h of hops) routed.set(h.hostId, h.unaudited === true)
      },
    })
    let tokens = 0
    for (let next = await run.next(); !next.done; next = await run.next()) tokens++
    expect(tokens).toBe(TOKENS)
  }
  return routed
}

async function addLiar(lying: LyingOptions): Promise<LyingHost> {
  return (await swarm.addHost([2, 4], (options) => new LyingHost(options, lying))) as LyingHost
}

beforeAll(async () => {
  dir = await scratchDir('neuron-sole-liars-')
  const model = join(dir.dir, 'model.gguf')
  await generateModel({ ...SHAPE, seed: 1, out: model })
  // Out of probation after one probe, no scheduled probe during the test, half the sessions audited: a liar's ~10
  // sessions in 100 steps go unaudited with probability 0.5^10 ≈ 1e-3.
  swarm = await startSwarm(dir.dir, model, [], {
    checks: { probationProbes: 1, probeEveryMs: 3_600_000, auditRate: 0.5 },
  })
  await swarm.addHost([0, 2])
  await swarm.addHost([4, 5])
  victimClient = await SwarmClient.connect(swarm.tracker.url, victim)
  bystander = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
}, 120_000)

afterAll(async () => {
  victimClient?.close()
  bystander?.close()
  await swarm?.close()
  await dir?.cleanup()
})

describe('liars a known-answer probe cannot see', () => {
  it(`the only host of its span, honest on each session's first 3 steps and lying after, is banned within ` +
    `${CAUGHT_WITHIN} steps routed through it`, async () => {
    // honest for its speed test and its first probe (3 steps), then honest on every session's first 3 steps
    const liar = await addLiar({ lie: { kind: 'noise', size: 0.5 }, honestSessions: 2, honestSteps: 3 })
    const { steps, chats } = await chatUntilBanned(bystander, liar.hostId)
    const checks = swarm.tracker.checks.of(liar.hostId)
    console.log(
      `honest for 3 steps a session: banned after ${steps} steps routed through it in ${chats} chats (${liar.lies} ` +
        `lies told): ${checks.ban?.reason}`,
    )
    expect(checks.ban?.reason).toMatch(/answered (step \d+|all \d+ steps) on blocks \[2, 4\) two ways/)
    expect(steps).toBeLessThanOrEqual(CAUGHT_WITHIN)
    expect(checks.probesFailed).toBe(0)
  }, 300_000)

  it(`the only host of its span, lying to one key alone, serves others without a strike and is banned within ` +
    `${CAUGHT_WITHIN} of that key's steps`, async () => {
    const liar = await addLiar({ lie: { kind: 'noise', size: 0.5 }, onlyKey: victim.publicKey })
    // every other key gets honest answers: audited, never found lying; its route says nobody else serves [2, 4)
    const routed = await chats(bystander, 3)
    expect(routed.get(liar.hostId)).toBe(true)
    expect(liar.lies).toBe(0)
    expect(swarm.tracker.checks.of(liar.hostId).auditsFailed).toBe(0)
    const { steps, chats: victimChats } = await chatUntilBanned(victimClient, liar.hostId)
    const checks = swarm.tracker.checks.of(liar.hostId)
    console.log(
      `lying to one key: banned after ${steps} of its steps in ${victimChats} chats (${liar.lies} lies told): ` +
        `${checks.ban?.reason}`,
    )
    expect(checks.ban?.reason).toMatch(/two ways/)
    expect(steps).toBeLessThanOrEqual(CAUGHT_WITHIN)
  }, 300_000)

  it(`the only host of its span, lying to one key on a session's first decode step alone, is banned within ` +
    `${CAUGHT_WITHIN} of that key's steps: an audit compares every step's rows with its commitment, not only the ` +
    `last answer`, async () => {
    const liar = await addLiar({ lie: { kind: 'noise', size: 0.5 }, onlyKey: victim.publicKey, onlySteps: [2] })
    const { steps, chats: victimChats } = await chatUntilBanned(victimClient, liar.hostId)
    const checks = swarm.tracker.checks.of(liar.hostId)
    console.log(
      `lying on step 2 alone: banned after ${steps} of its steps in ${victimChats} chats (${liar.lies} lies told): ` +
        `${checks.ban?.reason}`,
    )
    // one lie a chat, and the audits that found it compared the session's later (honest) steps too
    expect(liar.lies).toBeLessThanOrEqual(victimChats)
    expect(checks.ban?.reason).toMatch(/two ways/)
    expect(steps).toBeLessThanOrEqual(CAUGHT_WITHIN)
  }, 300_000)

  it('one of three hosts of its span, lying to one key alone, is banned at the first audit that outvotes it (one ' +
    'client’s strike alone would not)', async () => {
    // two honest hosts slower than it, so it is the one routed and they are there to re-run its steps
    const slow: LyingOptions = { lie: { kind: 'slow', factor: 1, delayMs: 15 } }
    const twins: Host[] = [
      await swarm.addHost([2, 4], (o) => new LyingHost(o, slow)),
      await swarm.addHost([2, 4], (o) => new LyingHost(o, slow)),
    ]
    const liar = await addLiar({ lie: { kind: 'noise', size: 0.5 }, onlyKey: victim.publicKey })
    const { steps } = await chatUntilBanned(victimClient, liar.hostId)
    const checks = swarm.tracker.checks.of(liar.hostId)
    console.log(`one of three, lying to one key: banned after ${steps} of its steps: ${checks.ban?.reason}`)
    expect(checks.ban?.reason).toMatch(/two ways/)
    expect(steps).toBeLessThanOrEqual(CAUGHT_WITHIN)
    for (const twin of twins) expect(swarm.tracker.checks.banned(twin.hostId)).toBe(false)
    // the victim's chats go on through the honest twins, each of which the other can check
    const routed = await chats(victimClient, 1)
    expect(routed.has(liar.hostId)).toBe(false)
    expect(twins.map((t) => routed.get(t.hostId)).filter((u) => u !== undefined)).toEqual([false])
  }, 300_000)
})
