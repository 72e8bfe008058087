import { Generation, type GenerationClient } from './generation'
import type { GeneratedToken, GenerateRequest, GenerationSummary } from './request'

/** Positions a conversation's session reserves on its hops by default (its turns go on while they fit). */
export const CONVERSATION_POSITIONS = 2048

export interface ConversationOptions {
  /**
   * Positions the session reserves on every hop for the whole conversation (default CONVERSATION_POSITIONS, at least
   * a turn's prompt and answer): the hosts keep that much cache between turns, paid as rent while it is held.
   */
  readonly positions?: number
}

/**
 * A conversation whose turns keep their cache: each turn's prompt is the whole conversation so far, and where it
 * begins with every token the session's hops hold (the turns before, as they were sent and answered), only the tokens
 * after those are sent, on the same session (route.turn). Otherwise (an edit in the middle, another model or sampling,
 * the session's positions full, or its hops gone) the turn starts a new session from zero. close() ends it.
 */
export class Conversation {
  private current: Generation | undefined

  constructor(
    private readonly client: GenerationClient,
    private readonly options: ConversationOptions = {},
  ) {}

  /** Streams one turn's tokens; the return value summarises the turn (`cachedTokens`: the positions not sent again). */
  async *turn(request: GenerateRequest): AsyncGenerator<GeneratedToken, GenerationSummary> {
    const tokens =
      typeof request.prompt === 'string'
        ? (await this.client.tokenizer(request.modelId)).encode(request.prompt)
        : [...request.prompt]
    const asked = { ...request, prompt: tokens }
    let generation = this.current
    if (generation?.continues(asked, tokens)) {
      try {
        await generation.continueWith(asked, tokens)
      } catch (error) {
        // the hops or the tracker gave the session up (it idled out, a host left): a new session, from zero
        this.client.log(`the conversation's session could not go on (${(error as Error).message}); starting anew`)
        generation = undefined
      }
    } else generation = undefined
    if (generation === undefined) {
      await this.current?.close()
      this.current = undefined
      generation = await Generation.open(this.client, asked, {
        positions: this.options.positions ?? CONVERSATION_POSITIONS,
      })
      this.current = generation
    }
    return yield* generation.run()
  }

  /** Ends the session: its hops free the cache, the tracker its hold (charging the rent), and audits run. */
  async close(): Promise<void> {
    const current = this.current
    this.current = undefined
    await current?.close()
  }
}
