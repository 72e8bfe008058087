import type { ModelTokenizer } from './tokenizer'

/** Tokens decoded before the new ones, so SentencePiece decides their leading spaces as it would in the whole text. */
const CONTEXT_TOKENS = 4

/**
 * A generation's text as its tokens come. A token that ends inside a multi-byte UTF-8 character (byte-fallback
 * tokens such as <0xE2>) adds nothing until the character is whole; flush() gives what is still held at the end,
 * an incomplete character as U+FFFD. The pieces joined equal llama.cpp's detokenize of the whole sequence.
 */
export class StreamingDetokenizer {
  private readonly tokens: number[] = []
  /** Tokens of `tokens` whose text has been given out. */
  private shown = 0

  constructor(private readonly tokenizer: Pick<ModelTokenizer, 'decode'>) {}

  /** The text `token` adds: '' while the character it is part of is incomplete (its piece ends in U+FFFD). */
  push(token: number): string {
    this.tokens.push(token)
    const piece = this.pending()
    if (piece.endsWith('\uFFFD')) return ''
    this.shown = this.tokens.length
    return piece
  }

  /** The text of the tokens still held, as llama.cpp decodes them (an incomplete character as U+FFFD); '' if none. */
  flush(): string {
    const piece = this.pending()
    this.shown = this.tokens.length
    return piece
  }

  private pending(): string {
    if (this.shown === this.tokens.length) return ''
    return this.tokenizer.decode(
      this.tokens.slice(this.shown),
      this.tokens.slice(Math.max(0, this.shown - CONTEXT_TOKENS), this.shown),
    )
  }
}
