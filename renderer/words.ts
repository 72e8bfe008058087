/**
 * The app's words for things a home user reads on several screens, so every screen says them the same way. Internally
 * a block is a layer, and ranges are 0-based and half-open ([2, 5) is the third to fifth layers); people count from 1.
 */

/** A block range as people say it: "layers 3–5 of 5", "layer 1 of 5"; without the total when it is not known. */
export function layerRange(blocks: readonly [number, number], total?: number): string {
  const [start, end] = blocks
  const of = total === undefined ? '' : ` of ${total}`
  if (end - start === 1) return `layer ${start + 1}${of}`
  return `layers ${start + 1}–${end}${of}`
}

/**
 * A message from the tracker (a placement's reason, a refusal) with its block ranges in people's words:
 * "the weakest blocks [1, 3)" reads "the weakest layers 2–3". The tracker speaks to the CLI too, so the app says it.
 */
export function plainRanges(text: string): string {
  return text.replace(/(?:\bblocks? )?\[(\d+), (\d+)\)/g, (_, start: string, end: string) =>
    layerRange([Number(start), Number(end)]),
  )
}

/** A count of layers: "1 layer", "5 layers". */
export function layerCount(n: number): string {
  return `${n} ${n === 1 ? 'layer' : 'layers'}`
}

/** What "unaudited" on a route means, in one sentence on the screen (not only a tooltip). */
export const UNAUDITED_EXPLAINED =
  'Unaudited: no other computer serves those layers, so that host’s answers cannot be compared with another’s; ' +
  'they are checked only by re-running them on it and by test questions with known answers.'
