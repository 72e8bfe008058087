import { markdownBlocks } from './markdown'

/** An answer's Markdown (code blocks, paragraphs, inline code) as React elements and text nodes only: no HTML from the model. */
export function Markdown({ source }: { source: string }) {
  return (
    <>
      {markdownBlocks(source).map((block, b) =>
        block.kind === 'code' ? (
          // biome-ignore lint/suspicious/noArrayIndexKey: blocks have no identity but their place, and only grow at the end
          <pre key={b} className="code-block" data-lang={block.lang || undefined} data-testid="chat-code-block">
            <code>{block.text}</code>
          </pre>
        ) : (
          // biome-ignore lint/suspicious/noArrayIndexKey: as above
          <p key={b} className="paragraph">
            {block.spans.map((span, s) =>
              span.code ? (
                // biome-ignore lint/suspicious/noArrayIndexKey: as above
                <code key={s} className="inline-code">
                  {span.text}
                </code>
              ) : (
                span.text
              ),
            )}
          </p>
        ),
      )}
    </>
  )
}
