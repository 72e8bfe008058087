// What a conversation's next turn keeps of its session's history (generation.ts's continueWith): the tokens the hops
// hold that the turn's prompt begins with, and each hop's record cut to them where the hops roll back.
import { type AuditableHop, keptRowsOf } from '../step-audits'
import { firstRowsOf } from './hop-to-hop'

/** How many first tokens `a` and `b` share. */
export function sharedPrefix(a: readonly number[], b: readonly number[]): number {
  let n = 0
  while (n < a.length && n < b.length && a[n] === b[n]) n++
  return n
}

/**
 * A hop's record cut to its first `positions` (its cache rolled back there for a conversation's turn): steps past them
 * are dropped (paid, never audited: their rows are gone), a step across the cut keeps its first rows (audited as a
 * verify step's are), and the last answer is forgotten until the next step's.
 */
export function cutHistory(h: AuditableHop, positions: number): void {
  let at = 0
  let kept = 0
  for (const input of h.inputs) {
    if (at >= positions) break
    const rows = Math.min(input.tokens, positions - at)
    if (rows < input.tokens) h.inputs[kept] = keptRowsOf(firstRowsOf(input, rows), input)
    at += input.tokens
    kept++
  }
  h.inputs.length = kept
  h.receipts.length = Math.min(h.receipts.length, kept)
  h.sketches.length = Math.min(h.sketches.length, kept)
  h.lastOutput = undefined
}
