// The temperature draw of native/sampler.ts over a whole vocabulary without sorting it whole: Llama 3's 128k and
// gpt-oss's 201k tokens took a 60–100 ms comparator sort per sampled token. The order is the one a stable sort by
// logit gives (largest first, ties by lower id); only what a draw can reach is sorted.

/** Vocabularies up to 2^21 tokens sort as one float64 key each (32 bits of logit order, 21 of id): exact. */
const ID_BITS = 21
/** Tokens whose weight is below this share of the mean weight stay unsorted unless a draw lands among them. */
const TAIL_SHARE = 2 ** -20

/** The ids (all, or `subset`'s) by logit, largest first, ties by lower id: one native numeric sort of packed keys. */
export function byLogit(values: Float32Array, subset?: ArrayLike<number>): number[] {
  const n = subset?.length ?? values.length
  if (values.length >= 2 ** ID_BITS) {
    const ids = subset === undefined ? Array.from(values.keys()) : Array.from(subset)
    return ids.sort((a, b) => (values[b] as number) - (values[a] as number) || a - b)
  }
  const bits = new Uint32Array(values.buffer, values.byteOffset, values.length)
  const keys = new Float64Array(n)
  for (let k = 0; k < n; k++) {
    const i = subset === undefined ? k : (subset[k] as number)
    const b = bits[i] as number
    // IEEE-754 order as an unsigned integer (negatives flipped whole, positives by their sign bit), then reversed so
    // that the largest value has the smallest key.
    const ordered = b & 0x80000000 ? ~b >>> 0 : (b | 0x80000000) >>> 0
    keys[k] = (0xffffffff - ordered) * 2 ** ID_BITS + i
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

/** What the draw gives: the chosen token, or (every draw refused) the candidates left in order and those refused. */
export type Drawn = { readonly chosen: number } | { readonly rest: number[]; readonly refused: ReadonlySet<number> }

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
  const all = ids === undefined
  let max = Number.NEGATIVE_INFINITY
  if (all) for (let i = 0; i < work.length; i++) max = Math.max(max, work[i] as number)
  else max = work[ids[0] as number] as number
  const n = all ? work.length : ids.length
  const weightOf = new Float64Array(n)
  let total = 0
  for (let k = 0; k < n; k++) {
    const w = Math.exp(((work[all ? k : (ids[k] as number)] as number) - max) / temperature)
    weightOf[k] = w
    total += w
  }
  // Slots: token ids for the whole vocabulary, positions in `ids` otherwise; `order` lists them in sampler order.
  // For the whole vocabulary only the heavy tokens are sorted; the light tail (2^-20 of the mass) only if a draw
  // reaches it.
  const slotToken = (slot: number) => (all ? slot : (ids[slot] as number))
  let order: number[]
  let sortedAll = !all
  if (all) {
    const floor = (total / n) * TAIL_SHARE
    const heavy: number[] = []
    for (let i = 0; i < n; i++) if ((weightOf[i] as number) >= floor) heavy.push(i)
    sortedAll = heavy.length === n
    order = byLogit(work, heavy)
  } else order = Array.from(ids.keys())
  /** Where the cumulative weight passes `r` (the last weighted slot past rounding), or -1 in the unsorted tail. */
  const find = (r: number) => {
    let cum = 0
    let at = -1
    for (let k = 0; k < order.length; k++) {
      const w = weightOf[order[k] as number] as number
      if (w === 0) continue
      at = k
      cum += w
      if (r < cum) return k
    }
    return sortedAll ? at : -1
  }
  const refused = new Set<number>()
  for (let draws = 0; draws < maxDraws && refused.size < n; draws++) {
    const r = rng() * total
    let at = find(r)
    if (at === -1) {
      order = byLogit(work)
      sortedAll = true
      at = find(r)
    }
    const slot = order[at] as number
    const chosen = slotToken(slot)
    if (allow === undefined || allow(chosen)) return { chosen }
    refused.add(chosen)
    total -= weightOf[slot] as number
    weightOf[slot] = 0
  }
  if (!sortedAll) order = byLogit(work)
  const rest: number[] = []
  for (const slot of order) if (!refused.has(slotToken(slot))) rest.push(slotToken(slot))
  return { rest, refused }
}
