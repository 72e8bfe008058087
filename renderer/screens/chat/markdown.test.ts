import { describe, expect, it } from 'vitest'
import { inlineSpans, markdownBlocks } from './markdown'

describe('answer markdown', () => {
  it('splits paragraphs on blank lines and keeps single line breaks inside one', () => {
    expect(markdownBlocks('One\ntwo\n\n\nThree')).toEqual([
      { kind: 'paragraph', spans: [{ code: false, text: 'One\ntwo' }] },
      { kind: 'paragraph', spans: [{ code: false, text: 'Three' }] },
    ])
  })

  it('reads fenced code blocks with their language, verbatim, blank lines and markup included', () => {
    const source = 'Try this:\n```ts\nconst a = `x`\n\n<b>bold</b>\n```\nDone.'
    expect(markdownBlocks(source)).toEqual([
      { kind: 'paragraph', spans: [{ code: false, text: 'Try this:' }] },
      { kind: 'code', lang: 'ts', text: 'const a = `x`\n\n<b>bold</b>', closed: true },
      { kind: 'paragraph', spans: [{ code: false, text: 'Done.' }] },
    ])
    // A ~~~ fence is closed only by ~~~, a ``` one by at least three backticks.
    expect(markdownBlocks('~~~\n```\n~~~')).toEqual([{ kind: 'code', lang: '', text: '```', closed: true }])
  })

  it('runs a fence still open while the answer streams to the end as code', () => {
    expect(markdownBlocks('```py\nprint(1)\n')).toEqual([{ kind: 'code', lang: 'py', text: 'print(1)\n', closed: false }])
  })

  it('cuts out inline code and leaves a lone backtick and HTML as text', () => {
    expect(inlineSpans('Use `npm start` or ``a ` b`` now')).toEqual([
      { code: false, text: 'Use ' },
      { code: true, text: 'npm start' },
      { code: false, text: ' or ' },
      { code: true, text: 'a ` b' },
      { code: false, text: ' now' },
    ])
    expect(inlineSpans('a ` b <script>x</script>')).toEqual([{ code: false, text: 'a ` b <script>x</script>' }])
  })
})
