import { firstStop } from '../../tracker/gateway/generation'

/**
 * An answer's text as it streams, cut at its first stop sequence (left out), as the tracker's gateway cuts one: the
 * text that might be the start of a stop sequence is held back until the next token says it is not.
 */
export class StopScan {
  private text = ''
  private sent = 0
  /** Characters held back: a stop sequence's start, at most one short of the longest. */
  private readonly hold: number

  constructor(private readonly stops: readonly string[]) {
    this.hold = Math.max(0, ...stops.map((s) => s.length - 1))
  }

  /** Takes the next piece of text: what may be shown now, and whether a stop sequence ended the answer. */
  push(piece: string): { text: string; stopped: boolean } {
    this.text += piece
    const { at, stopSequence } = firstStop(this.text, this.stops)
    const end = stopSequence === undefined ? Math.max(this.sent, this.text.length - this.hold) : at
    const text = this.text.slice(this.sent, end)
    this.sent = Math.max(this.sent, end)
    return { text, stopped: stopSequence !== undefined }
  }

  /** The text held back, once the answer ended without a stop sequence. */
  flush(): string {
    const text = this.text.slice(this.sent)
    this.sent = this.text.length
    return text
  }
}
