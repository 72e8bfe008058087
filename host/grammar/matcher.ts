import { type CharClass, type Grammar, GrammarError } from './gbnf'

// A grammar's parse states as llama.cpp keeps them: a set of stacks, each the positions still to match, innermost
// last; a stack's top is always a character class, and an empty stack means the text so far is a whole sentence.

/** A position inside a rule: rule, alternative, element. */
type Frame = readonly [number, number, number]
type Stack = readonly Frame[]

/** Stacks a state may hold: an ambiguous grammar can multiply them; past this the grammar is refused as too costly. */
export const MAX_STACKS = 512
/** How deep the rule references may nest while expanding (left recursion never ends). */
const MAX_DEPTH = 256

export class GrammarState {
  private constructor(
    private readonly grammar: Grammar,
    readonly stacks: readonly Stack[],
  ) {}

  static start(grammar: Grammar): GrammarState {
    const out: Stack[] = []
    for (let a = 0; a < (grammar.rules[grammar.root]?.length ?? 0); a++) expand(grammar, [[grammar.root, a, 0]], out, 0)
    return new GrammarState(grammar, dedupe(out))
  }

  /** Whether the text so far is a whole sentence of the grammar (the end-of-generation token may follow). */
  get accepts(): boolean {
    return this.stacks.some((s) => s.length === 0)
  }

  /** Whether no character may follow. */
  get finished(): boolean {
    return this.stacks.every((s) => s.length === 0)
  }

  /**
   * The state after `text`, or undefined when the text leaves
   * the grammar's language; each stack tried costs `work` one.
   */
  advance(text: string, work?: { left: number }): GrammarState | undefined {
    let stacks = this.stacks
    for (const ch of text) {
      if (work !== undefined) work.left -= stacks.length
      if (work !== undefined && work.left < 0)
        throw new GrammarError(
          'the grammar took more work than a step allows (its rules are too ambiguous for this vocabulary)',
        )
      const cp = ch.codePointAt(0) as number
      const out: Stack[] = []
      for (const s of stacks) {
        const top = s[s.length - 1]
        if (top === undefined) continue
        const el = this.grammar.rules[top[0]]?.[top[1]]?.[top[2]]
        if (el?.kind !== 'chars' || !matches(el, cp)) continue
        expand(this.grammar, [...s.slice(0, -1), [top[0], top[1], top[2] + 1]], out, 0)
      }
      if (out.length === 0) return undefined
      stacks = dedupe(out)
    }
    return new GrammarState(this.grammar, stacks)
  }
}

function matches(c: CharClass, cp: number): boolean {
  let inside = false
  for (const [lo, hi] of c.ranges)
    if (cp >= lo && cp <= hi) {
      inside = true
      break
    }
  return inside !== c.negated
}

/** Pushes onto `out` every stack `stack` can become whose top is a character class (or that is empty). */
function expand(g: Grammar, stack: Stack, out: Stack[], depth: number): void {
  if (depth > MAX_DEPTH)
    throw new GrammarError(`rules nest deeper than ${MAX_DEPTH} without a character (left recursion?)`)
  if (out.length > MAX_STACKS)
    throw new GrammarError(`the grammar is too ambiguous: more than ${MAX_STACKS} parse states at once`)
  const top = stack[stack.length - 1]
  if (top === undefined) {
    out.push(stack)
    return
  }
  const alt = g.rules[top[0]]?.[top[1]] ?? []
  const rest = stack.slice(0, -1)
  if (top[2] >= alt.length) {
    expand(g, rest, out, depth + 1)
    return
  }
  const el = alt[top[2]]
  if (el === undefined || el.kind === 'chars') {
    out.push(stack)
    return
  }
  const after: Stack = top[2] + 1 < alt.length ? [...rest, [top[0], top[1], top[2] + 1]] : rest
  const alts = g.rules[el.rule] ?? []
  for (let a = 0; a < alts.length; a++) expand(g, [...after, [el.rule, a, 0]], out, depth + 1)
}

function dedupe(stacks: Stack[]): Stack[] {
  const seen = new Map<string, Stack>()
  for (const s of stacks) seen.set(s.map((f) => f.join(',')).join(';'), s)
  return [...seen.values()]
}
