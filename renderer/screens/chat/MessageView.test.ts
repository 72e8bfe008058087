import { createElement } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import type { ChatEntry } from '../../stores/chat/initialState'
import { MessageView } from './MessageView'

const render = (message: ChatEntry) =>
  renderToStaticMarkup(createElement(MessageView, { message, onResend: async () => true }))

describe('a chat message as shown', () => {
  it('shows a failed answer that never got a token as its error card alone, with no empty bubble above it', () => {
    const failed = render({
      id: 'a1',
      role: 'assistant',
      content: '',
      createdAt: 1,
      status: 'error',
      error: { code: 'no_route', message: 'No hosts serve every block' },
    })
    expect(failed).not.toContain('class="bubble"')
    expect(failed).toContain('No hosts serve every block')
    // A streaming answer shows its bubble (with the caret) before the first token.
    expect(render({ id: 'a2', role: 'assistant', content: '', createdAt: 1, status: 'streaming' })).toContain(
      'class="bubble"',
    )
  })

  it('renders an answer’s Markdown as elements and text, never the model’s HTML', () => {
    const html = render({
      id: 'a3',
      role: 'assistant',
      content: 'Run `ls`:\n\n```sh\n<img src=x onerror=alert(1)>\n```',
      createdAt: 1,
      status: 'done',
    })
    expect(html).toContain('<code class="inline-code">ls</code>')
    expect(html).toContain(
      '<pre class="code-block" data-lang="sh" data-testid="chat-code-block"><code>&lt;img src=x ' +
        'onerror=alert(1)&gt;</code></pre>',
    )
    expect(html).not.toContain('<img')
    expect(html).toContain('data-testid="chat-copy"')
  })

  it('offers edit-and-resend on a user’s turn and shows its text as typed', () => {
    const html = render({ id: 'u1', role: 'user', content: 'Use `this` <b>as is</b>', createdAt: 1 })
    expect(html).toContain('Use `this` &lt;b&gt;as is&lt;/b&gt;')
    expect(html).toContain('data-testid="chat-edit"')
  })
})
