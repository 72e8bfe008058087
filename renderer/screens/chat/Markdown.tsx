import { memo, type ReactNode, useDeferredValue } from 'react'
import ReactMarkdown, { type Components, type ExtraProps } from 'react-markdown'
import remarkGfm from 'remark-gfm'
import { CopyButton } from '../../components/CopyButton'
import { safeLinkUrl } from './safe-url'

// An answer's Markdown (GFM: tables, lists, headings, emphasis, links, code) through react-markdown, which
// builds React elements and never sets HTML. Raw HTML in the text shows as the literal text it is (react-markdown
// turns it into text nodes when skipHtml is off, so nothing vanishes without a trace and nothing of it runs), links go
// only to http(s)/mailto and open outside the app, and images are not loaded: the answer shows their alt text.

type HastNode = NonNullable<ExtraProps['node']> | { type: string; value?: string; children?: HastNode[] }

/** A hast node's text, as the Copy button copies it. */
function textOf(node: HastNode | undefined): string {
  if (node === undefined) return ''
  if ('value' in node && typeof node.value === 'string') return node.value
  return 'children' in node && node.children !== undefined
    ? node.children.map((child) => textOf(child as HastNode)).join('')
    : ''
}

/** A fence's language, from the `language-…` class remark gives its code element. */
function languageOf(pre: NonNullable<ExtraProps['node']> | undefined): string {
  const code = pre?.children[0]
  const classes = code?.type === 'element' ? code.properties.className : undefined
  const names = Array.isArray(classes) ? classes.map(String) : []
  return names.find((name) => name.startsWith('language-'))?.slice('language-'.length) ?? ''
}

/**
 * A fenced (or indented) code block: its language, a Copy button, and
 * its text verbatim. Still open while streaming, it runs to the end.
 */
function CodeBlock({ node }: ExtraProps) {
  const lang = languageOf(node)
  // remark ends a block's text with a newline; the copy is the code alone.
  const text = textOf(node).replace(/\n$/, '')
  return (
    <div className="code-frame" data-testid="chat-code">
      <div className="code-bar">
        <span className="code-lang mono" data-testid="chat-code-lang">
          {lang === '' ? 'code' : lang}
        </span>
        <CopyButton text={text} label="Copy this code" subtle testId="chat-code-copy" />
      </div>
      <pre className="code-block" data-lang={lang || undefined} data-testid="chat-code-block">
        <code>{text}</code>
      </pre>
    </div>
  )
}

/** A link that opens outside the app; one whose URL is not http(s)/mailto is its text alone. */
function Link({ href, children }: { href?: string | undefined; children?: ReactNode }) {
  const url = safeLinkUrl(href ?? '')
  if (url === '') return <span className="inert-link">{children}</span>
  return (
    <a href={url} target="_blank" rel="noopener noreferrer" title={url}>
      {children}
    </a>
  )
}

/** An image is never fetched: its alt text shows instead, as a link to open it when its URL is a web address. */
function Image({ src, alt }: { src?: string | Blob | undefined; alt?: string | undefined }) {
  const label = `[image${alt ? `: ${alt}` : ''}]`
  return <Link href={typeof src === 'string' ? src : undefined}>{label}</Link>
}

// At module level: the same component types on every render, so a code block's Copy state survives streaming.
const COMPONENTS: Components = {
  pre: CodeBlock,
  // `pre` renders its own code, so this one is only ever inline.
  code: ({ children }) => <code className="inline-code">{children}</code>,
  a: ({ href, children }) => <Link href={href}>{children}</Link>,
  img: ({ src, alt }) => <Image src={src} alt={alt} />,
  p: ({ children }) => <p className="paragraph">{children}</p>,
  table: ({ children }) => (
    <div className="table-scroll">
      <table className="md-table">{children}</table>
    </div>
  ),
}

const PLUGINS = [remarkGfm]

/** Memoized: while one answer streams, the thread re-renders, and only that answer's text has changed. */
const MarkdownBody = memo(function MarkdownBody({ source }: { source: string }) {
  return (
    <ReactMarkdown remarkPlugins={PLUGINS} urlTransform={safeLinkUrl} components={COMPONENTS}>
      {source}
    </ReactMarkdown>
  )
})

/**
 * Each render parses the whole answer (tens of ms for a long one on a busy machine), so while it streams the
 * text shown may lag a token behind: React skips to the newest text instead of parsing every token, and typing
 * stays responsive. A finished answer shows its final text in the same render as its status.
 */
export function Markdown({ source, streaming = false }: { source: string; streaming?: boolean }) {
  const deferred = useDeferredValue(source)
  return <MarkdownBody source={streaming ? deferred : source} />
}
