// What a generation yields (paid-for text with its tokens' log-probabilities, then one finish), and a whole one read.
import type { GeneratedToken } from '../../client/swarm-client'
import type { ModelTokenizer } from '../../text/tokenizer'
import { GatewayError } from './errors'

/** A generated token's log-probability and the most likely tokens at its place, in OpenAI's shape. */
export interface TokenLogprob {
  readonly token: string
  readonly logprob: number
  readonly bytes: number[]
  readonly top_logprobs: { readonly token: string; readonly logprob: number; readonly bytes: number[] }[]
}

/**
 * What a generation yields: paid-for text as it comes (with its
 * tokens' log-probabilities when asked), then exactly one finish.
 */
export type Chunk =
  | { readonly text: string; readonly logprobs?: readonly TokenLogprob[] }
  /** `stopSequence`: which of the stop strings ended it (Anthropic's stop_sequence); absent when the model ended it. */
  | {
      readonly done: true
      readonly finishReason: 'stop' | 'length'
      readonly completionTokens: number
      /** Of the prompt, the tokens its hosts started from a cache of (not prefilled again, nor paid for). */
      readonly cachedTokens?: number
      readonly stopSequence?: string
    }

/** A whole generation's text and finish, for a response that is not streamed. */
export async function collect(
  stream: AsyncGenerator<Chunk, void>,
  first?: IteratorResult<Chunk, void>,
): Promise<{
  text: string
  finishReason: 'stop' | 'length'
  completionTokens: number
  cachedTokens: number
  logprobs: TokenLogprob[]
  stopSequence?: string
}> {
  let text = ''
  const logprobs: TokenLogprob[] = []
  let finish: Extract<Chunk, { done: true }> | undefined
  // To its end, past the finish: the generation's own clean-up (settling, releasing its hold, the request log) runs
  // only when it is resumed after its last chunk, so a caller that stopped at the finish would leave it suspended.
  for (let next = first ?? (await stream.next()); !next.done; next = await stream.next()) {
    const c = next.value
    if ('done' in c) finish = c
    else {
      text += c.text
      logprobs.push(...(c.logprobs ?? []))
    }
  }
  if (finish !== undefined)
    return {
      text,
      finishReason: finish.finishReason,
      completionTokens: finish.completionTokens,
      cachedTokens: finish.cachedTokens ?? 0,
      logprobs,
      ...(finish.stopSequence === undefined ? {} : { stopSequence: finish.stopSequence }),
    }
  throw new GatewayError(500, 'server_error', 'internal', 'the generation ended without a finish reason')
}

/** A generation's tokens with their log-probabilities, given out with the text they begin in. */
export class LogprobTrail {
  private readonly tokens: { start: number; entry: TokenLogprob }[] = []
  private given = 0
  private last: number | undefined

  constructor(private readonly tokenizer: Pick<ModelTokenizer, 'decode'>) {}

  /** `t` begins at `start` in the text. */
  push(t: GeneratedToken, start: number): void {
    const entry = (token: string, logprob: number) => ({ token, logprob, bytes: [...Buffer.from(token)] })
    // An alternative reads as it would in the token's place: after the token before it.
    const previous = this.last === undefined ? [] : [this.last]
    this.last = t.token
    const top = (t.top ?? []).map((a) => entry(this.tokenizer.decode([a.token], previous), a.logprob))
    this.tokens.push({ start, entry: { ...entry(t.text, t.logprob), top_logprobs: top } })
  }

  /** The tokens not given yet that begin before `end`. */
  until(end: number): TokenLogprob[] {
    const out: TokenLogprob[] = []
    while (this.given < this.tokens.length && (this.tokens[this.given]?.start ?? end) < end)
      out.push((this.tokens[this.given++] as { entry: TokenLogprob }).entry)
    return out
  }
}
