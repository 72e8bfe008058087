// The temperature draw of native/sampler.ts over a whole vocabulary without sorting it whole: Llama 3's 128k and
// gpt-oss's 201k tokens took a 60–100 ms comparator sort per sampled token. The order is the one a stable sort by
// logit gives (largest first, ties by lower id); only the group of tokens a draw lands in is sorted.

/** Vocabularies up to 2^21 tokens sort as one float64 key each (32 bits of logit order, 21 of id): exact. */
const ID_BITS = 21

/** From this many ids on, byLogit orders them by a radix sort (linear) instead of a numeric sort (n log n). */
const RADIX_FROM = 512
/** Bits of the key each radix pass orders by (three passes: 11, 11 and 10 bits). */
const RADIX_BITS = 11

/** IEEE-754 order as an unsigned integer, reversed: the largest value has the smallest key (negatives flip whole). */
function descendingKey(bits: number): number {
  const ordered = bits & 0x80000000 ? ~bits >>> 0 : (bits | 0x80000000) >>> 0
  return 0xffffffff - ordered
}

/** Whether `ids` rise strictly (a radix sort keeps ties in input order, so only then are they by lower id). */
function rising(ids: ArrayLike<number>): boolean {
  for (let k = 1; k < ids.length; k++) if ((ids[k] as number) <= (ids[k - 1] as number)) return false
  return true
}

/**
 * byLogit by a least-significant-digit radix sort of the 32-bit keys: stable, so ties keep the ids' rising order.
 * A whole 32k vocabulary at a temperature took 4–5 ms a token as one numeric sort of packed keys.
 */
function radixByLogit(values: Float32Array, subset: ArrayLike<number> | undefined, n: number): number[] {
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length)
  let keys = new Uint32Array(n)
  let ids = new Uint32Array(n)
  for (let k = 0; k < n; k++) {
    const i = subset === undefined ? k : (subset[k] as number)
    keys[k] = descendingKey(bits[i] as number)
    ids[k] = i
  }
  let toKeys = new Uint32Array(n)
  let toIds = new Uint32Array(n)
  const slots = 1 << RADIX_BITS
  const starts = new Uint32Array(slots)
  for (let shift = 0; shift < 32; shift += RADIX_BITS) {
    starts.fill(0)
    for (let k = 0; k < n; k++) {
      const digit = ((keys[k] as number) >>> shift) & (slots - 1)
      starts[digit] = (starts[digit] as number) + 1
    }
    let at = 0
    for (let d = 0; d < slots; d++) {
      const count = starts[d] as number
      starts[d] = at
      at += count
    }
    for (let k = 0; k < n; k++) {
      const key = keys[k] as number
      const digit = (key >>> shift) & (slots - 1)
      const to = starts[digit] as number
      starts[digit] = to + 1
      toKeys[to] = key
      toIds[to] = ids[k] as number
    }
    ;[keys, toKeys] = [toKeys, keys]
    ;[ids, toIds] = [toIds, ids]
  }
  return Array.from(ids)
}

/** The ids (all, or `subset`'s) by logit, largest first, ties by lower id. */
export function byLogit(values: Float32Array, subset?: ArrayLike<number>): number[] {
  const n = subset?.length ?? values.length
  if (n >= RADIX_FROM && (subset === undefined || rising(subset))) return radixByLogit(values, subset, n)
  // few ids, or ids in another order: one native numeric sort of packed keys (logit order, then id)
  if (values.length >= 2 ** ID_BITS) {
    const ids = subset === undefined ? Array.from(values.keys()) : Array.from(subset)
    return ids.sort((a, b) => (values[b] as number) - (values[a] as number) || a - b)
  }
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length)
  const keys = new Float64Array(n)
  for (let k = 0; k < n; k++) {
    const i = subset === undefined ? k : (subset[k] as number)
    keys[k] = descendingKey(bits[i] as number) * 2 ** ID_BITS + i
  }
  keys.sort()
  const out = new Array<number>(n)
  for (let k = 0; k < n; k++) out[k] = (keys[k] as number) % 2 ** ID_BITS
  return out
}

/** The `k` best ids by logit, in order (an insertion into the k best so far: one pass for small k). */
export function bestIds(values: Float32Array, k: number): number[] {
  if (k > 256) return byLogit(values).slice(0, k)
  const best: number[] = []
  for (let i = 0; i < values.length; i++) {
    if (best.length === k && (values[i] as number) <= (values[best[k - 1] as number] as number)) continue
    let at = best.length
    while (at > 0 && (values[best[at - 1] as number] as number) < (values[i] as number)) at--
    best.splice(at, 0, i)
    if (best.length > k) best.pop()
  }
  return best
}

/**
 * What the draw gives: the chosen token, or (every draw refused) the candidates left in order and those refused. A
 * whole vocabulary's draw at temperature 1 gives its largest logit and the sum of every exp(logit − max) too: the
 * terms of the chosen token's log-probability, summed in the same order as logSoftmaxAt sums them.
 */
export type Drawn =
  | { readonly chosen: number; readonly whole?: { readonly max: number; readonly total: number } }
  | { readonly rest: number[]; readonly refused: ReadonlySet<number> }

/** The whole vocabulary's draw groups tokens by the top bits of their key (sign, exponent, 7 bits of mantissa). */
const GROUP_SHIFT = 16

/**
 * Draws from `ids` (in sampler order; undefined for the whole vocabulary) with weights exp((logit − max) / T),
 * trying again without a token `allow` refuses, at most `maxDraws` times.
 */
export function drawToken(
  work: Float32Array,
  ids: readonly number[] | undefined,
  temperature: number,
  rng: () => number,
  allow: ((token: number) => boolean) | undefined,
  maxDraws: number,
): Drawn {
  if (ids === undefined) return drawFromAll(work, temperature, rng, allow, maxDraws)
  const max = work[ids[0] as number] as number
  const weightOf = Float64Array.from(ids, (id) => Math.exp(((work[id] as number) - max) / temperature))
  let total = weightOf.reduce((sum, w) => sum + w, 0)
  const refused = new Set<number>()
  for (let draws = 0; draws < maxDraws && refused.size < ids.length; draws++) {
    const at = walk(weightOf, ids.keys(), rng() * total)
    // what is left weighs nothing (exp underflowed far below the largest): taken in order, as after every refusal
    if (at === -1) break
    const chosen = ids[at] as number
    if (allow === undefined || allow(chosen)) return { chosen }
    refused.add(chosen)
    total -= weightOf[at] as number
    weightOf[at] = 0
  }
  return { rest: ids.filter((id) => !refused.has(id)), refused }
}

/**
 * The slot of `order` where the cumulative weight passes `r`, or the last weighted slot when rounding keeps the sum
 * a hair under it (-1 with no weight at all).
 */
function walk(weightOf: Float64Array, order: Iterable<number>, r: number): number {
  let cum = 0
  let last = -1
  for (const slot of order) {
    const w = weightOf[slot] as number
    if (w === 0) continue
    last = slot
    cum += w
    if (r < cum) return slot
  }
  return last
}

/**
 * The draw over a whole vocabulary in sampler order (by logit, largest first, ties by lower id) without ordering it
 * whole: tokens fall into groups by the top bits of their logit's order key, the groups' weights are walked in
 * order, and only the group the random number lands in is ordered (byLogit) and walked. Llama 3's 128k and gpt-oss's
 * 201k tokens took 60–100 ms per sampled token with a comparator sort of the vocabulary; a 32k one 4–8 ms with one
 * numeric sort of it.
 */
function drawFromAll(
  work: Float32Array,
  temperature: number,
  rng: () => number,
  allow: ((token: number) => boolean) | undefined,
  maxDraws: number,
): Drawn {
  const n = work.length
  let max = Number.NEGATIVE_INFINITY
  for (let i = 0; i < n; i++) max = Math.max(max, work[i] as number)
  const bits = new Uint32Array(work.buffer, work.byteOffset, n)
  const weightOf = new Float64Array(n)
  const groupOf = new Uint16Array(n)
  const groupWeight = new Float64Array(2 ** (32 - GROUP_SHIFT))
  let total = 0
  for (let i = 0; i < n; i++) {
    const w = Math.exp(((work[i] as number) - max) / temperature)
    const g = descendingKey(bits[i] as number) >>> GROUP_SHIFT
    weightOf[i] = w
    groupOf[i] = g
    groupWeight[g] = (groupWeight[g] as number) + w
    total += w
  }
  const whole = temperature === 1 ? { max, total } : undefined
  const refused = new Set<number>()
  for (let draws = 0; draws < maxDraws && refused.size < n; draws++) {
    const r = rng() * total
    // the group the number lands in (the last weighted one when rounding keeps the sum a hair under it)
    let cum = 0
    let group = -1
    let before = 0
    for (let k = 0; k < groupWeight.length; k++) {
      const w = groupWeight[k] as number
      if (w === 0) continue
      group = k
      before = cum
      cum += w
      if (r < cum) break
    }
    if (group === -1) break
    const members: number[] = []
    for (let i = 0; i < n; i++) if (groupOf[i] === group) members.push(i)
    const chosen = walk(weightOf, byLogit(work, members), r - before)
    if (chosen !== -1 && (allow === undefined || allow(chosen)))
      return whole === undefined ? { chosen } : { chosen, whole }
    if (chosen !== -1) refused.add(chosen)
    total -= chosen === -1 ? 0 : (weightOf[chosen] as number)
    if (chosen !== -1) weightOf[chosen] = 0
    // summed again from its members: subtracting would leave a group of refused tokens a rounding error of weight
    groupWeight[group] = members.reduce((sum, i) => sum + (weightOf[i] as number), 0)
  }
  const rest: number[] = []
  for (const id of byLogit(work)) if (!refused.has(id)) rest.push(id)
  return { rest, refused }
}
