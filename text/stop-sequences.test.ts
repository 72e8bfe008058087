import { describe, expect, it } from 'vitest'
import { StopScan } from './stop-sequences'

/** The text shown piece by piece, and whether a stop sequence ended it. */
function stream(stops: string[], pieces: string[]): { shown: string[]; stopped: boolean } {
  const scan = new StopScan(stops)
  const shown: string[] = []
  for (const piece of pieces) {
    const { text, stopped } = scan.push(piece)
    shown.push(text)
    if (stopped) return { shown, stopped }
  }
  shown.push(scan.flush())
  return { shown, stopped: false }
}

describe("an answer's stop sequences", () => {
  it('ends the answer where its text first contains one, leaving it out, even across tokens', () => {
    expect(stream(['The end'], ['Once', ' upon. The', ' e', 'nd and more'])).toEqual({
      shown: ['', 'Once upo', 'n.', ' '],
      stopped: true,
    })
    expect(stream(['\n', 'cat'], ['A dog', ' and a cat\nthen'])).toEqual({ shown: ['A d', 'og and a '], stopped: true })
  })

  it('shows everything, held back text included, when none comes; without stops, each piece at once', () => {
    expect(stream(['STOP'], ['Once', ' upon', ' a time'])).toEqual({
      shown: ['O', 'nce u', 'pon a t', 'ime'],
      stopped: false,
    })
    expect(stream([], ['Once', ' upon'])).toEqual({ shown: ['Once', ' upon', ''], stopped: false })
  })
})
