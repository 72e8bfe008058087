import { describe, expect, it } from 'vitest'
import { LOG_LINES_KEPT, LOG_LINES_PER_ANSWER } from '../../protocol'
import { AppLog } from './app-log'

describe("the app's log, as the Log screen reads it", () => {
  it('keeps the newest lines and says how many it could not send', () => {
    const log = new AppLog()
    for (let i = 1; i <= LOG_LINES_KEPT + 10; i++) log.add(`line ${i}`)
    const first = log.since(0)
    expect(first.lines).toHaveLength(LOG_LINES_PER_ANSWER)
    expect(first.lines.at(-1)?.text).toBe(`line ${LOG_LINES_KEPT + 10}`)
    expect(first.skipped).toBe(LOG_LINES_KEPT + 10 - LOG_LINES_PER_ANSWER)
    expect(log.since(LOG_LINES_KEPT + 10)).toEqual({ lines: [], skipped: 0 })
    expect(log.since(LOG_LINES_KEPT + 8).lines.map((l) => l.text)).toEqual([
      `line ${LOG_LINES_KEPT + 9}`,
      `line ${LOG_LINES_KEPT + 10}`,
    ])
  })

  it('prints every line and keeps a very long one cut', () => {
    const printed: string[] = []
    const log = new AppLog((l) => printed.push(l))
    log.add('hosting stories260k')
    log.add(`could not reach the tracker: ${'x'.repeat(10_000)}`)
    expect(printed).toHaveLength(2)
    expect(log.since(0).lines[1]?.text.length).toBeLessThan(4100)
  })
})
