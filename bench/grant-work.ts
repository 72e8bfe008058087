// npm run bench:grant-work — what one core can farm in a day at the new-key grant's default proof of work. Each round
// times plain sha256 on this core (the baseline: one createHash per message, as long as a grant proof's), then solves
// --proofs proofs with the honest client's solver (identity/grant-work.ts) on fresh challenges, then, when openssl is
// here, its native sha256 rate (what a farmer with optimized code gets). Each round is printed with the load average;
// the last JSON line holds the medians, the ratios and the grants and credits one core farms a day, before the
// per-prefix bound (which caps one network at DEFAULT_GRANTS_PER_PREFIX_PER_DAY whatever its cores).
//
// Options: --bits 19 (default DEFAULT_GRANT_WORK_BITS)  --proofs 8  --rounds 3  --grant-micro 10000000
import { spawnSync } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { loadavg } from 'node:os'
import { hasGrantWork, solveGrantWork } from '../identity/grant-work'
import { NodeIdentity } from '../identity/keys'
import { DEFAULT_GRANT_WORK_BITS, DEFAULT_GRANTS_PER_PREFIX_PER_DAY, grantWorkMessage, MICRO } from '../protocol'

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`)
  return i >= 0 ? (process.argv[i + 1] ?? fallback) : fallback
}
const BITS = Number(arg('bits', String(DEFAULT_GRANT_WORK_BITS)))
const PROOFS = Number(arg('proofs', '8'))
const ROUNDS = Number(arg('rounds', '3'))
const GRANT_MICRO = Number(arg('grant-micro', String(10 * MICRO)))
if (!Number.isSafeInteger(BITS) || BITS < 1 || !(PROOFS >= 1) || !(ROUNDS >= 1) || !(GRANT_MICRO > 0))
  throw new Error('--bits takes a whole number ≥ 1, --proofs and --rounds ≥ 1, --grant-micro > 0')

const DAY_S = 86_400
const median = (xs: readonly number[]) => {
  const s = [...xs].sort((a, b) => a - b)
  const m = s.length >> 1
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2
}
const round3 = (n: number) => Math.round(n * 1000) / 1000
const load = () => round3(loadavg()[0] ?? 0)
const challenge = () => `grant.${Date.now() + 300_000}.${randomBytes(18).toString('base64url')}`

/** sha256 of a grant-proof-sized message per second on this core, one createHash each, for about a second. */
function plainHashRate(publicKey: string): number {
  const prefix = grantWorkMessage(challenge(), publicKey, '')
  let n = 0
  const started = performance.now()
  while (performance.now() - started < 1000)
    for (const end = n + 10_000; n < end; n++)
      createHash('sha256')
        .update(`${prefix}${n.toString(36)}`)
        .digest()
  return n / ((performance.now() - started) / 1000)
}

/** openssl's native sha256 of 64-byte messages per second on one core, or undefined without openssl. */
function nativeHashRate(): number | undefined {
  const run = spawnSync('openssl', ['speed', '-seconds', '1', '-bytes', '64', 'sha256'], { encoding: 'utf8' })
  const line = run.status === 0 ? run.stdout.split('\n').find((l) => l.startsWith('sha256')) : undefined
  const kBytes = line === undefined ? Number.NaN : Number.parseFloat(line.split(/\s+/)[1] ?? '')
  return Number.isFinite(kBytes) ? (kBytes * 1000) / 64 : undefined
}

/** Solves `PROOFS` proofs on fresh challenges; seconds per proof, tries per second. */
async function solveRate(
  identity: NodeIdentity,
): Promise<{ secondsPerProof: number; triesPerSecond: number; triesPerProof: number }> {
  let tries = 0
  const started = performance.now()
  for (let p = 0; p < PROOFS; p++) {
    const c = challenge()
    const found = await solveGrantWork(c, identity.publicKey, BITS)
    if (!hasGrantWork(c, identity.publicKey, found.nonce, BITS))
      throw new Error(`the solver's nonce ${found.nonce} fails the tracker's check`)
    tries += found.tries
  }
  const seconds = (performance.now() - started) / 1000
  return { secondsPerProof: seconds / PROOFS, triesPerSecond: tries / seconds, triesPerProof: tries / PROOFS }
}

const identity = NodeIdentity.generate()
const rounds: {
  plain: number
  native: number | undefined
  secondsPerProof: number
  triesPerSecond: number
  triesPerProof: number
}[] = []
console.log(
  `grant proof of ${BITS} bits (2^${BITS} = ${2 ** BITS} tries on average), ${PROOFS} proofs a round, ${ROUNDS} rounds`,
)
for (let r = 1; r <= ROUNDS; r++) {
  const plain = plainHashRate(identity.publicKey)
  const solved = await solveRate(identity)
  const native = nativeHashRate()
  rounds.push({ plain, native, ...solved })
  console.log(
    `round ${r}: plain sha256 ${Math.round(plain)}/s, solver ${Math.round(solved.triesPerSecond)} tries/s, ` +
      `${round3(solved.secondsPerProof)} s a proof ` +
      `(${Math.round(solved.triesPerProof)} tries), openssl ` +
      `${native === undefined ? 'absent' : `${Math.round(native)}/s`}, load ${load()}`,
  )
}
const secondsPerProof = median(rounds.map((r) => r.secondsPerProof))
const plain = median(rounds.map((r) => r.plain))
const solver = median(rounds.map((r) => r.triesPerSecond))
const natives = rounds.flatMap((r) => (r.native === undefined ? [] : [r.native]))
const native = natives.length === 0 ? undefined : median(natives)
// Expected cost of a proof is 2^bits tries whatever the luck of these rounds: the per-day figures use it.
const honestSecondsPerProof = 2 ** BITS / solver
const grantsPerDayPerCore = DAY_S / honestSecondsPerProof
const farmerGrantsPerDayPerCore = native === undefined ? undefined : (DAY_S * native) / 2 ** BITS
console.log(
  `median: ${round3(secondsPerProof)} s a proof measured, ${round3(honestSecondsPerProof)} s expected at ` +
    `${Math.round(solver)} tries/s; load ${load()}`,
)
console.log(
  JSON.stringify({
    bench: 'grant-work',
    bits: BITS,
    proofsPerRound: PROOFS,
    rounds: ROUNDS,
    medianSecondsPerProofMeasured: round3(secondsPerProof),
    expectedSecondsPerProof: round3(honestSecondsPerProof),
    plainSha256PerSecond: Math.round(plain),
    solverTriesPerSecond: Math.round(solver),
    solverVsPlainSha256: round3(solver / plain),
    opensslSha256PerSecond: native === undefined ? null : Math.round(native),
    opensslVsSolver: native === undefined ? null : round3(native / solver),
    grantsPerDayPerCore: Math.round(grantsPerDayPerCore),
    creditsPerDayPerCore: round3((grantsPerDayPerCore * GRANT_MICRO) / MICRO),
    farmerGrantsPerDayPerCore: farmerGrantsPerDayPerCore === undefined ? null : Math.round(farmerGrantsPerDayPerCore),
    farmerCreditsPerDayPerCore:
      farmerGrantsPerDayPerCore === undefined ? null : round3((farmerGrantsPerDayPerCore * GRANT_MICRO) / MICRO),
    grantMicro: GRANT_MICRO,
    grantsPerPrefixPerDay: DEFAULT_GRANTS_PER_PREFIX_PER_DAY,
    creditsPerPrefixPerDay: round3((DEFAULT_GRANTS_PER_PREFIX_PER_DAY * GRANT_MICRO) / MICRO),
    load: load(),
  }),
)
