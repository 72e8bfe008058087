import type { LogLine } from '../../../protocol/app'

/** The Log screen keeps as many lines as the backend does. */
export const LINES_SHOWN = 2000

/** New lines appended to the ones shown, the oldest dropped past LINES_SHOWN. */
export function appendLines(shown: readonly LogLine[], more: readonly LogLine[]): LogLine[] {
  const last = shown[shown.length - 1]?.seq ?? 0
  const joined = [...shown, ...more.filter((l) => l.seq > last)]
  return joined.slice(-LINES_SHOWN)
}

export function filterLines(lines: readonly LogLine[], filter: string): readonly LogLine[] {
  const query = filter.trim().toLowerCase()
  if (query === '') return lines
  return lines.filter((l) => l.text.toLowerCase().includes(query))
}

/** How a line reads at a glance: something failed or was refused, or an ordinary line. */
export function lineTone(text: string): 'bad' | 'plain' {
  return /\b(fail(ed|s)?|error|could not|cannot|refused|lost|not sent)\b/i.test(text) ? 'bad' : 'plain'
}

/** The lines as text, to copy into a bug report: time and line, one per row. */
export function logText(lines: readonly LogLine[]): string {
  return lines.map((l) => `${new Date(l.at).toISOString()} ${l.text}`).join('\n')
}
