import type { Sampled } from '../../native'
import { NeuronError, SamplingParams } from '../../protocol'
import { compileGrammar, GrammarConstraint, type TokenTexts } from '../grammar/constraint'
import type { Grammar } from '../grammar/gbnf'
import type { ServingSession } from './serving-runtime'

/**
 * A session's sampling at the last hop: its parameters, the counts of the tokens it generated (OpenAI's
 * penalties) and its grammar's state, both advanced by each token it samples.
 */
export class LastHopSampler {
  private readonly counts = new Map<number, number>()
  private constraint: GrammarConstraint | undefined

  private constructor(
    readonly params: ReturnType<typeof SamplingParams.parse>,
    private readonly grammar: Grammar | undefined,
    private readonly tokenTexts: (() => Promise<TokenTexts>) | undefined,
  ) {
    for (const t of params.generated ?? []) this.counts.set(t, (this.counts.get(t) ?? 0) + 1)
  }

  /**
   * Checks an open's sampling before any work: a malformed grammar is
   * `bad_grammar`, one this host cannot hold `grammar_unsupported`.
   */
  static open(sampling: unknown, tokenTexts: (() => Promise<TokenTexts>) | undefined): LastHopSampler {
    const params = SamplingParams.parse(sampling ?? {})
    if (params.grammar === undefined) return new LastHopSampler(params, undefined, tokenTexts)
    if (tokenTexts === undefined)
      throw new NeuronError(
        'grammar_unsupported',
        'this host has no vocabulary to hold a grammar to; ask the tracker for another route.',
      )
    return new LastHopSampler(params, compileGrammar(params.grammar), tokenTexts)
  }

  /** The next token after `next` positions, from the session's last logits. */
  async sample(session: Pick<ServingSession, 'sample'>, next: number): Promise<Sampled> {
    const s = this.params
    if (this.grammar !== undefined && this.constraint === undefined && this.tokenTexts !== undefined) {
      this.constraint = new GrammarConstraint(this.grammar, await this.tokenTexts(), s.endTokens ?? [])
      for (const t of s.generated ?? []) this.constraint.accept(t)
    }
    const sampled = session.sample({
      temperature: s.temperature,
      ...(s.topK === undefined ? {} : { topK: s.topK }),
      ...(s.topP === undefined ? {} : { topP: s.topP }),
      ...(s.minP === undefined ? {} : { minP: s.minP }),
      ...(s.repeatPenalty === undefined ? {} : { repeatPenalty: { penalty: s.repeatPenalty } }),
      ...(s.presencePenalty === undefined ? {} : { presencePenalty: s.presencePenalty }),
      ...(s.frequencyPenalty === undefined ? {} : { frequencyPenalty: s.frequencyPenalty }),
      ...(s.topLogprobs === undefined ? {} : { topLogprobs: s.topLogprobs }),
      ...(this.constraint === undefined ? {} : { allow: this.constraint.allows }),
      counts: this.counts,
      // The draw depends on (seed, position) only, so a replacement hop after failover draws the same token.
      seed: (Math.imul(s.seed ^ 0x9e3779b9, 0x85ebca6b) + Math.imul(next, 0xc2b2ae35)) >>> 0,
    })
    this.counts.set(sampled.token, (this.counts.get(sampled.token) ?? 0) + 1)
    this.constraint?.accept(sampled.token)
    return sampled
  }
}
