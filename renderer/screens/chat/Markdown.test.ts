import { createElement } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import { Markdown } from './Markdown'
import { safeLinkUrl } from './safe-url'

const render = (source: string) => renderToStaticMarkup(createElement(Markdown, { source }))

describe('an answer’s Markdown as shown', () => {
  it('renders a GFM table, a list, a heading, emphasis and inline code as elements', () => {
    const html = render(
      '## Sizes\n\n| model | blocks |\n|---|--:|\n| stories | **5** |\n\n- one `ls`\n- *two*\n\n1. first\n2. second',
    )
    expect(html).toContain('<h2>Sizes</h2>')
    expect(html).toContain(
      '<div class="table-scroll"><table class="md-table"><thead><tr><th>model</th><th ' +
        'style="text-align:right">blocks</th></tr></thead>',
    )
    expect(html).toContain('<tr><td>stories</td><td style="text-align:right"><strong>5</strong></td></tr>')
    expect(html).toContain('<li>one <code class="inline-code">ls</code></li>')
    expect(html).toContain('<li><em>two</em></li>')
    expect(html).toContain('<ol>')
  })

  it('shows a fenced block verbatim with its language and a Copy button for that block', () => {
    const html = render('Try:\n\n```ts\nconst a = `x` < 2 && "<b>"\n```\n\nand\n\n```\nplain\n```')
    expect(html).toContain('<span class="code-lang mono" data-testid="chat-code-lang">ts</span>')
    expect(html).toContain(
      '<pre class="code-block" data-lang="ts" data-testid="chat-code-block"><code>const a = `x` &lt; 2 &amp;&amp; ' +
        '&quot;&lt;b&gt;&quot;</code></pre>',
    )
    // One Copy button per block; a block with no language says "code".
    expect(html.match(/data-testid="chat-code-copy"/g)).toHaveLength(2)
    expect(html).toContain('title="Copy this code"')
    expect(html).toContain('data-testid="chat-code-lang">code</span>')
  })

  it('shows HTML in the text as literal text: no script, no image, no event handler reaches the page', () => {
    const html = render(
      'Hello <script>alert(1)</script> there <img src=x onerror=alert(2)>\n\n<div ' +
        'onclick="alert(3)">click</div>\n\n<iframe src="https://example.com"></iframe>',
    )
    // The HTML shows as the literal text the model wrote, escaped.
    expect(html).toContain('Hello &lt;script&gt;alert(1)&lt;/script&gt; there &lt;img src=x onerror=alert(2)&gt;')
    expect(html).toContain('&lt;div onclick=&quot;alert(3)&quot;&gt;')
    for (const tag of ['<script', '<img', '<div onclick', '<iframe']) expect(html).not.toContain(tag)
    // No element carries an event handler.
    expect(html).not.toMatch(/<[^>]*\son(error|click)=/)
  })

  it(
    'makes only http(s) and mailto links clickable, opening ' + 'outside the app; a javascript: link is its text alone',
    () => {
      const html = render(
        '[docs](https://example.com/a?b=1) [mail](mailto:a@example.com) [bad](javascript:alert(1)) ' +
          '[data](data:text/html,hi) [here](/settings)',
      )
      expect(html).toContain(
        '<a href="https://example.com/a?b=1" target="_blank" rel="noopener noreferrer" ' +
          'title="https://example.com/a?b=1">docs</a>',
      )
      expect(html).toContain('<a href="mailto:a@example.com" target="_blank" rel="noopener noreferrer"')
      expect(html).toContain('<span class="inert-link">bad</span>')
      expect(html).toContain('<span class="inert-link">data</span>')
      expect(html).toContain('<span class="inert-link">here</span>')
      expect(html).not.toContain('javascript:')
      expect(html).not.toContain('data:text')
      expect(html.match(/<a /g)).toHaveLength(2)
      // Case and spaces do not sneak a scheme past the check.
      expect(safeLinkUrl(' JavaScript:alert(1)')).toBe('')
      expect(safeLinkUrl('HTTPS://example.com')).toBe('HTTPS://example.com')
    },
  )

  it('never loads an image from the network: its alt text shows, as a link to open it', () => {
    const html = render('![a cat](https://example.com/cat.png) ![](file:///etc/passwd)')
    expect(html).not.toContain('<img')
    expect(html).toContain(
      '<a href="https://example.com/cat.png" target="_blank" rel="noopener noreferrer" ' +
        'title="https://example.com/cat.png">[image: a cat]</a>',
    )
    expect(html).toContain('<span class="inert-link">[image]</span>')
  })

  it('renders an answer cut mid-stream, inside an unclosed fence, as the code so far', () => {
    const partial = 'Here is the code:\n\n```python\ndef f(x):\n    return x *'
    const html = render(partial)
    expect(html).toContain('<p class="paragraph">Here is the code:</p>')
    expect(html).toContain(
      '<pre class="code-block" data-lang="python" data-testid="chat-code-block"><code>def f(x):\n    return x ' +
        '*</code></pre>',
    )
    // Every prefix of a streamed answer renders: an open table, emphasis or link included.
    const answer = `${partial} 2\n\`\`\`\n\n| a | b |\n|---|---|\n| **1 | [x](https://e.com`
    for (let end = 0; end <= answer.length; end++) expect(() => render(answer.slice(0, end))).not.toThrow()
  })
})
