// Stop sequences (OpenAI's `stop`, a chat's sampling settings): where one ends a streamed answer, and how much text
// is held back meanwhile. The tracker's gateway and the app's chat both cut answers by these rules.

/** Where the earliest stop string in `text` starts, and which it is; `at` -1 and no stop when none is there. */
export function firstStop(text: string, stops: readonly string[]): { at: number; stopSequence: string | undefined } {
  let at = -1
  let stopSequence: string | undefined
  for (const s of stops) {
    const i = text.indexOf(s)
    if (i !== -1 && (at === -1 || i < at)) [at, stopSequence] = [i, s]
  }
  return { at, stopSequence }
}

/** Characters a stream holds back at its end: what may be a stop string's start, one short of the longest. */
export function stopHoldback(stops: readonly string[]): number {
  return Math.max(0, ...stops.map((s) => s.length - 1))
}

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
    this.hold = stopHoldback(stops)
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
