// npm run bench:audit — what auditing real traffic costs. Audits run once a session is over, off its critical path:
// a session picks each hop at the audit rate, and each picked hop's history is re-run on another host as one prefill
// and compared, every step, with the sketches its receipts commit to. Printed: extra compute (the whole process's
// CPU time, the audits included: tracker, hosts and client run in it) and extra latency per token for the user, with
// 10 %, 25 % (the default) and 50 % of sessions audited, against no audits in the same swarm, rounds alternating;
// what the audits of a 2 000-token session cost against that session's own prefill through the same hops; the false
// positives of honest hosts over many audited steps (f16 seams, two chats at once so steps batch with other
// sessions'); then liars: the lying harness's modes, and those a known-answer probe never sees lie (honest on a
// session's first N steps; lying to one key only; a last hop lying past step 3), as the only host of their span (the
// tracker re-runs it itself, as with --rerun-dir) and as one of three: the steps routed through each before its ban.
// The last line is one JSON object with the ratios and those counts.
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { SwarmClient } from '../client/swarm-client'
import { referenceReruns } from '../host/reference-reruns'
import { NodeIdentity } from '../identity/keys'
import { LyingHost, type LyingOptions } from '../test/lying-host'
import { startSwarm } from '../test/programs'
import { BENCH_DIR, benchModel } from './models'

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    'honest-steps': { type: 'string', default: '1000' },
    'long-session': { type: 'string', default: '2000' },
  },
})
const ROUNDS = Number(values.rounds)
const HONEST_STEPS = Number(values['honest-steps'])
const LONG_SESSION = Number(values['long-session'])
/** Chances that a session's hop is audited: the default (0.25) between half and double it. */
const RATES = [0.1, 0.25, 0.5]
const DECODE = 48
const SESSIONS = 3
const PROMPT = [1, 523, 87, 1002, 45, 9, 300, 77]
/** Compute sets the pace, not loopback: 8 blocks of 768, q8_0. */
const SHAPE = { arch: 'llama', blocks: 8, embd: 768, heads: 12, kvHeads: 4, ff: 2048, vocab: 4096, seed: 1 } as const

const source = await benchModel('q8_0', SHAPE)
const work = await mkdtemp(join(BENCH_DIR, 'audit-'))
// Two hosts per span, so every audited step has another host to re-run it; out of probation after one probe.
const ranges: [number, number][] = [
  [0, 3],
  [3, 6],
  [6, 8],
  [0, 3],
  [3, 6],
  [6, 8],
]
const swarm = await startSwarm(work, source, ranges, {
  checks: { probationProbes: 1, probeEveryMs: 3_600_000, auditRate: 0, auditsPerMinute: 1_000_000 },
  startingGrantMicro: 1_000_000_000,
  newKeyGrantMicro: 1_000_000_000,
  // the bench's clients are not farming: no proof of work, no per-prefix bound (bench/grant-work.ts measures those)
  grantWorkBits: 0,
  grantsPerPrefixPerDay: 1_000_000,
})
const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
const modelId = swarm.manifest.modelId

interface Measure {
  tokens: number
  msPerToken: number
  cpuMsPerToken: number
  p50TokenMs: number
}

async function measure(rate: number): Promise<Measure> {
  swarm.tracker.checks.setAuditRate(rate)
  const gaps: number[] = []
  let tokens = 0
  const cpu = process.cpuUsage()
  let wall = 0
  for (let s = 0; s < SESSIONS; s++) {
    const run = client.generate({ modelId, prompt: PROMPT, maxTokens: DECODE, stopAtEog: false })
    let last = performance.now()
    const from = last
    for (let next = await run.next(); !next.done; next = await run.next()) {
      const now = performance.now()
      gaps.push(now - last)
      last = now
      tokens++
    }
    wall += performance.now() - from
  }
  // the audits the sessions picked, run after each (beside the next): their compute counts, the user waits for none
  await client.auditsSettled()
  const used = process.cpuUsage(cpu)
  return {
    tokens,
    msPerToken: wall / tokens,
    cpuMsPerToken: (used.user + used.system) / 1000 / tokens,
    p50TokenMs: median(gaps),
  }
}

function median(xs: readonly number[]): number {
  return [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? 0
}

function checkTotals() {
  let passed = 0
  let failed = 0
  let banned = 0
  for (const h of swarm.hosts) {
    const c = swarm.tracker.checks.of(h.hostId)
    passed += c.auditsPassed + c.probesPassed
    failed += c.auditsFailed + c.probesFailed
    if (c.ban !== null) banned++
  }
  return { passed, failed, banned }
}

const results = new Map<number, Measure[]>([[0, []], ...RATES.map((r) => [r, []] as [number, Measure[]])])
let falsePositives = { passed: 0, failed: 0, banned: 0, steps: 0 }
/** Audit compute of a long session, in prefills of it, each round. */
const longAudits: number[] = []
try {
  await measure(0) // warm-up: tokenizer, connections, page cache
  for (let round = 0; round < ROUNDS; round++) {
    for (const rate of RATES) {
      for (const r of [0, rate]) {
        const m = await measure(r)
        results.get(r)?.push(m)
        console.log(JSON.stringify({ round, audit_rate: r, ...m, load_average: loadavg()[0] }))
      }
    }
  }
  // What the audits of one long session cost, against that session's own prefill through the same hops: the prompt
  // alone (one token out, no audits), then the same prompt and a few tokens more with every hop audited, each round.
  const longPrompt = Array.from({ length: LONG_SESSION - 8 }, (_, i) => 3 + ((i * 7919) % 4000))
  for (let round = 0; round < ROUNDS; round++) {
    swarm.tracker.checks.setAuditRate(0)
    let cpu = process.cpuUsage()
    for await (const _ of client.generate({ modelId, prompt: longPrompt, maxTokens: 1, stopAtEog: false })) {
    }
    await client.auditsSettled()
    const prefill = process.cpuUsage(cpu)
    swarm.tracker.checks.setAuditRate(1)
    for await (const _ of client.generate({ modelId, prompt: longPrompt, maxTokens: 8, stopAtEog: false })) {
    }
    cpu = process.cpuUsage()
    await client.auditsSettled()
    const audits = process.cpuUsage(cpu)
    const ms = (u: NodeJS.CpuUsage) => (u.user + u.system) / 1000
    const r = { round, session_tokens: LONG_SESSION, prefill_cpu_ms: ms(prefill), audits_cpu_ms: ms(audits) }
    longAudits.push(r.audits_cpu_ms / r.prefill_cpu_ms)
    console.log(JSON.stringify({ ...r, prefills: r.audits_cpu_ms / r.prefill_cpu_ms, load_average: loadavg()[0] }))
  }

  // Every hop of every session audited, honest hosts only, two chats at once: none may be found lying.
  swarm.tracker.checks.setAuditRate(1)
  const before = checkTotals()
  let steps = 0
  for (let i = 0; i < 10_000 && steps * 3 < HONEST_STEPS; i += 2) {
    const chat = async (prompt: number[]) => {
      const run = client.generate({ modelId, prompt, maxTokens: 32, stopAtEog: false })
      for (let next = await run.next(); !next.done; next = await run.next()) steps++
    }
    await Promise.all([chat([...PROMPT, i % 4000]), chat([...PROMPT, (i + 1) % 4000, 5])])
    await client.auditsSettled()
  }
  const after = checkTotals()
  falsePositives = {
    passed: after.passed - before.passed,
    failed: after.failed - before.failed,
    banned: after.banned,
    // each audit compares every step of its hop: three hops a step
    steps: steps * 3,
  }
  console.log(
    JSON.stringify({
      honest_audits_passed: falsePositives.passed,
      honest_audited_steps: falsePositives.steps,
      false_positives: falsePositives.failed,
      banned_honest_hosts: after.banned,
      tokens: steps,
    }),
  )
} finally {
  client.close()
  await swarm.close()
  await rm(work, { recursive: true, force: true })
}

/**
 * Steps routed through a liar of blocks [3, 6) (or the last hop's, [6, 8)) before its ban, a quarter of sessions
 * audited (the default), in a swarm of its own: the liar alone on its span, or with two honest (slower) hosts of it.
 * Chats of 32 greedy tokens, at most 2 000 steps.
 */
async function stepsToCatch(
  lying: (victimKey: string) => LyingOptions,
  twins: number,
  lastHop = false,
): Promise<{ steps: number; banned: boolean; reason: string }> {
  const span: [number, number] = lastHop ? [6, 8] : [3, 6]
  const dir = await mkdtemp(join(BENCH_DIR, 'audit-liar-'))
  // as `neuron tracker --rerun-dir` runs: blocks only the liar serves are re-run by the tracker itself
  const liars = await startSwarm(dir, source, [], {
    checks: { probationProbes: 1, probeEveryMs: 3_600_000, auditRate: 0.25 },
    ownReruns: referenceReruns({ dataDir: join(dir, 'reruns') }),
  })
  const victim = NodeIdentity.generate()
  const client = await SwarmClient.connect(liars.tracker.url, victim)
  try {
    await liars.addHost([0, 3])
    await liars.addHost(lastHop ? [3, 6] : [6, 8])
    for (let i = 0; i < twins; i++)
      await liars.addHost(span, (o) => new LyingHost(o, { lie: { kind: 'slow', factor: 1, delayMs: 15 } }))
    const liar = await liars.addHost(span, (o) => new LyingHost(o, lying(victim.publicKey)))
    let steps = 0
    for (let chat = 0; chat < 200 && steps < 2000 && !liars.tracker.checks.banned(liar.hostId); chat++) {
      let through = false
      const run = client.generate({
        modelId: liars.manifest.modelId,
        prompt: [...PROMPT, chat % 4000],
        maxTokens: 32,
        stopAtEog: false,
        onRoute: (hops) => {
          through = hops.some((h) => h.hostId === liar.hostId)
        },
      })
      try {
        for (let next = await run.next(); !next.done; next = await run.next()) if (through) steps++
      } catch (error) {
        // the liar banned mid-chat (its own re-run, in the background, may land then), or the chat failed over and
        // found no other host of its span: said, and the next chat goes on
        await client.auditsSettled()
        if (!liars.tracker.checks.banned(liar.hostId))
          console.log(JSON.stringify({ chat, failed: (error as Error).message, load_average: loadavg()[0] }))
      }
      // the chat's audits, run once it is over
      await client.auditsSettled()
    }
    const ban = liars.tracker.checks.of(liar.hostId).ban
    return { steps, banned: ban !== null, reason: ban?.reason ?? 'not banned' }
  } finally {
    client.close()
    await liars.close()
    await rm(dir, { recursive: true, force: true })
  }
}

const liarModes: { name: string; lying: (victimKey: string) => LyingOptions; lastHop?: boolean }[] = [
  // the lying harness's modes, past the probe of their first session
  { name: 'zeros', lying: () => ({ lie: { kind: 'zeros' }, honestSessions: 2 }) },
  { name: 'noise_0.5', lying: () => ({ lie: { kind: 'noise', size: 0.5 }, honestSessions: 2 }) },
  { name: 'replays_an_answer', lying: () => ({ lie: { kind: 'replay' }, honestSessions: 2 }) },
  {
    name: 'honest_first_3_steps',
    lying: () => ({ lie: { kind: 'noise', size: 0.2 }, honestSessions: 2, honestSteps: 3 }),
  },
  { name: 'lies_to_one_key', lying: (victimKey) => ({ lie: { kind: 'noise', size: 0.2 }, onlyKey: victimKey }) },
  // a last hop that skips the pass past each session's third step (the probes' length): its tokens are re-drawn
  {
    name: 'last_hop_past_step_3',
    lying: () => ({ lie: { kind: 'zeros' }, honestSessions: 2, honestSteps: 3 }),
    lastHop: true,
  },
]
const caught: Record<string, number | string> = {}
for (const mode of liarModes) {
  for (const twins of [0, 2]) {
    const name = `${mode.name}_${twins === 0 ? 'sole_host' : 'of_three'}`
    const found = await stepsToCatch(mode.lying, twins, mode.lastHop)
    console.log(
      JSON.stringify({
        liar: name,
        steps_routed_before_ban: found.steps,
        banned: found.banned,
        reason: found.reason,
        load_average: loadavg()[0],
      }),
    )
    caught[`steps_to_ban_${name}`] = found.banned ? found.steps : 'not banned'
  }
}

const base = results.get(0) ?? []
const baseLatency = median(base.map((m) => m.msPerToken))
const baseCpu = median(base.map((m) => m.cpuMsPerToken))
const summary: Record<string, number | string> = {
  model: `llama ${SHAPE.blocks}x${SHAPE.embd} q8_0, 3 hops, 2 hosts per span`,
  baseline_ms_per_token: baseLatency,
  baseline_cpu_ms_per_token: baseCpu,
  load_average: loadavg()[0] ?? 0,
}
for (const rate of RATES) {
  const ms = results.get(rate) ?? []
  summary[`latency_ratio_${rate}`] = median(ms.map((m) => m.msPerToken)) / baseLatency
  summary[`compute_ratio_${rate}`] = median(ms.map((m) => m.cpuMsPerToken)) / baseCpu
}
summary.audit_cost_in_prefills_of_a_long_session = median(longAudits)
summary.long_session_tokens = LONG_SESSION
summary.honest_audited_steps = falsePositives.steps
summary.honest_audits_passed = falsePositives.passed
summary.false_positives = falsePositives.failed
console.log(JSON.stringify({ ...summary, ...caught }))
