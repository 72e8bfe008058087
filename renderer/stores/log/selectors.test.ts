import { describe, expect, it } from 'vitest'
import { appendLines, filterLines, LINES_SHOWN, lineTone, logText } from './selectors'

const line = (seq: number, text: string) => ({ seq, at: Date.UTC(2026, 11, 7, 4, 0, seq), text })

describe('the Log screen', () => {
  it('shows each line once, in order, up to the lines it keeps', () => {
    let shown = appendLines([], [line(1, 'one'), line(2, 'two'), line(3, 'three')])
    // A poll that overlaps the last one adds nothing twice.
    shown = appendLines(shown, [line(3, 'three'), line(4, 'four')])
    expect(shown.map((l) => l.text)).toEqual(['one', 'two', 'three', 'four'])
    const many = Array.from({ length: LINES_SHOWN + 5 }, (_, i) => line(10 + i, `x${i}`))
    expect(appendLines(shown, many)).toHaveLength(LINES_SHOWN)
  })

  it('filters by text, marks failures and copies as text', () => {
    const lines = [line(1, 'hosting stories260k blocks [0, 5)'), line(2, 'could not reach the tracker')]
    expect(filterLines(lines, ' STORIES ').map((l) => l.seq)).toEqual([1])
    expect(filterLines(lines, '')).toHaveLength(2)
    expect(lines.map((l) => lineTone(l.text))).toEqual(['plain', 'bad'])
    expect(logText(lines.slice(0, 1))).toBe('2026-12-07T04:00:01.000Z hosting stories260k blocks [0, 5)')
  })
})
