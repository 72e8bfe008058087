// The Markdown an answer is shown with: fenced code blocks, paragraphs and inline code, nothing else.
// The result is plain data rendered as React text nodes, so no model output ever becomes HTML.

export type Span = { code: boolean; text: string }
export type Block = { kind: 'code'; lang: string; text: string; closed: boolean } | { kind: 'paragraph'; spans: Span[] }

const FENCE = /^ {0,3}(`{3,}|~{3,})\s*([^`\s]*)[^`]*$/

/** `source` as blocks; a fence still open (an answer streaming) runs to the end as code. */
export function markdownBlocks(source: string): Block[] {
  const lines = source.replace(/\r\n?/g, '\n').split('\n')
  const blocks: Block[] = []
  let paragraph: string[] = []
  const endParagraph = () => {
    if (paragraph.length > 0) blocks.push({ kind: 'paragraph', spans: inlineSpans(paragraph.join('\n')) })
    paragraph = []
  }
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? ''
    const open = FENCE.exec(line)
    if (open !== null) {
      endParagraph()
      const marker = open[1] ?? '```'
      const body: string[] = []
      let closed = false
      for (i++; i < lines.length; i++) {
        const next = lines[i] ?? ''
        if (closes(next, marker)) {
          closed = true
          break
        }
        body.push(next)
      }
      blocks.push({ kind: 'code', lang: open[2] ?? '', text: body.join('\n'), closed })
    } else if (line.trim() === '') {
      endParagraph()
    } else {
      paragraph.push(line)
    }
  }
  endParagraph()
  return blocks
}

/** A closing fence: the opening's character, at least as many, nothing after but spaces. */
function closes(line: string, marker: string): boolean {
  const trimmed = line.trim()
  const char = marker[0] ?? '`'
  return trimmed.length >= marker.length && [...trimmed].every((c) => c === char) && /^ {0,3}\S/.test(line)
}

/** Text with `inline code` runs cut out; an unmatched backtick stays text. */
export function inlineSpans(text: string): Span[] {
  const spans: Span[] = []
  const pattern = /(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g
  let at = 0
  for (const match of text.matchAll(pattern)) {
    if (match.index > at) spans.push({ code: false, text: text.slice(at, match.index) })
    spans.push({ code: true, text: (match[2] ?? '').replace(/^ (.*) $/s, '$1') })
    at = match.index + match[0].length
  }
  if (at < text.length) spans.push({ code: false, text: text.slice(at) })
  return spans
}
