import { NeuronError } from '../../protocol'
import { type Grammar, GrammarError, parseGbnf } from './gbnf'
import { GrammarState } from './matcher'

/**
 * Parse stacks a step may try over all its candidates: a 150k vocabulary through a JSON grammar's few stacks
 * takes well under 1M; an ambiguous grammar that would take seconds per token is stopped instead.
 */
export const MAX_WORK_PER_STEP = 4_000_000

/** Each token's text as it reads after another token (SentencePiece's leading space kept); '' for control tokens. */
export type TokenTexts = readonly string[]

/** Parses a session's grammar, refusing a malformed one with `bad_grammar` before any work. */
export function compileGrammar(source: string): Grammar {
  try {
    const grammar = parseGbnf(source)
    GrammarState.start(grammar) // left recursion and ambiguity show at the start
    return grammar
  } catch (error) {
    if (error instanceof GrammarError)
      throw new NeuronError('bad_grammar', `the session's grammar is refused: ${error.message}`)
    throw error
  }
}

/**
 * Generated text held to a grammar token by token: a token is allowed when its text keeps the output a prefix of
 * a sentence of the grammar; an end-of-generation token only when the output is a whole sentence. A token whose
 * text is empty (a control token) or holds an incomplete character (a lone UTF-8 byte) is never allowed.
 */
export class GrammarConstraint {
  private state: GrammarState
  private readonly ends: ReadonlySet<number>
  /** The state after each first character tried since the last token: most candidates fail or pass on it. */
  private readonly afterFirst = new Map<string, GrammarState | undefined>()
  /** What is left of this step's work (stacks tried, see MAX_WORK_PER_STEP). */
  private work = { left: MAX_WORK_PER_STEP }

  constructor(
    grammar: Grammar,
    private readonly texts: TokenTexts,
    endTokens: readonly number[],
  ) {
    this.state = GrammarState.start(grammar)
    this.ends = new Set(endTokens)
  }

  readonly allows = (token: number): boolean => {
    if (this.ends.has(token)) return this.state.accepts
    const text = this.texts[token]
    if (text === undefined || text === '' || text.includes('\uFFFD')) return false
    const first = String.fromCodePoint(text.codePointAt(0) as number)
    let after = this.afterFirst.get(first)
    if (!this.afterFirst.has(first)) {
      after = this.guarded(() => this.state.advance(first, this.work))
      this.afterFirst.set(first, after)
    }
    return (
      after !== undefined &&
      (text.length === first.length ||
        this.guarded(() => after.advance(text.slice(first.length), this.work)) !== undefined)
    )
  }

  private guarded(advance: () => GrammarState | undefined): GrammarState | undefined {
    try {
      return advance()
    } catch (error) {
      if (error instanceof GrammarError)
        throw new NeuronError('grammar_too_costly', `the session's grammar is stopped: ${error.message}`)
      throw error
    }
  }

  /** Takes `token` as generated (an end token or one not allowed leaves the state as it was). */
  accept(token: number): void {
    if (this.ends.has(token)) return
    this.state = this.state.advance(this.texts[token] ?? '') ?? this.state
    this.afterFirst.clear()
    this.work = { left: MAX_WORK_PER_STEP }
  }
}
