import { LOG_LINE_CHARS, LOG_LINES_KEPT, LOG_LINES_PER_ANSWER, type LogLine, type LogView } from '../../protocol'

/**
 * The backend's log lines as they are printed, the last LOG_LINES_KEPT kept for the Log screen; each line also goes
 * on to `print` (the terminal, or Electron's log).
 */
export class AppLog {
  private readonly lines: LogLine[] = []
  private seq = 0

  constructor(private readonly print: (line: string) => void = () => {}) {}

  /** Keeps a line and prints it. */
  readonly add = (text: string): void => {
    this.seq += 1
    const kept = text.length > LOG_LINE_CHARS ? `${text.slice(0, LOG_LINE_CHARS)}…` : text
    this.lines.push({ seq: this.seq, at: Date.now(), text: kept })
    if (this.lines.length > LOG_LINES_KEPT) this.lines.splice(0, this.lines.length - LOG_LINES_KEPT)
    this.print(text)
  }

  /** The lines after `after`: the newest LOG_LINES_PER_ANSWER of them, and how many before those were not sent. */
  since(after: number): LogView {
    const newer = this.lines.filter((l) => l.seq > after)
    const sent = newer.slice(-LOG_LINES_PER_ANSWER)
    const first = sent[0]?.seq ?? this.seq + 1
    return { lines: sent, skipped: Math.max(0, first - after - 1) }
  }
}
