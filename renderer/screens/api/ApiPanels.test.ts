import { createElement } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import type { ApiAccessView } from '../../../protocol/app'
import { ApiEndpointPanel } from './ApiEndpointPanel'
import { ApiRequestsPanel } from './ApiRequestsPanel'

const view: ApiAccessView = {
  endpoint: 'http://127.0.0.1:7070/v1',
  lanOpen: false,
  embedded: true,
  modelIds: ['stories260k'],
  key: null,
}

describe('the API tab’s panels', () => {
  it('lists each request with its endpoint, model, tokens, credits and status, and says when there is none', () => {
    const row = {
      startedAt: Date.UTC(2026, 0, 1),
      endpoint: 'chat.completions',
      modelId: 'stories260k',
      promptTokens: 12,
      completionTokens: 8,
      chargedMicro: 2_500,
      status: 'completed',
    }
    const html = renderToStaticMarkup(
      createElement(ApiRequestsPanel, {
        requests: [row, { ...row, status: 'swarm_stalled', startedAt: row.startedAt - 1 }],
        onRefresh() {},
      }),
    )
    expect(html.match(/data-testid="api-request-row"/g)).toHaveLength(2)
    for (const text of ['/chat/completions', 'stories260k', '>12<', '>8<', '>0.0025<', 'completed', 'swarm_stalled'])
      expect(html).toContain(text)
    expect(renderToStaticMarkup(createElement(ApiRequestsPanel, { requests: [], onRefresh() {} }))).toContain(
      'No requests yet.',
    )
  })

  it('has the home-network switch on the embedded swarm only, saying the key is still needed', () => {
    const off = renderToStaticMarkup(createElement(ApiEndpointPanel, { view, busy: false, onLanOpen() {} }))
    expect(off).toContain('role="switch"')
    expect(off).toContain('aria-checked="false"')
    const on = renderToStaticMarkup(
      createElement(ApiEndpointPanel, {
        view: { ...view, lanOpen: true, endpoint: 'http://192.168.1.20:7070/v1' },
        busy: false,
        onLanOpen() {},
      }),
    )
    expect(on).toContain('aria-checked="true"')
    expect(on).toContain('http://192.168.1.20:7070/v1')
    expect(on).toContain('still needs the key')
    expect(
      renderToStaticMarkup(
        createElement(ApiEndpointPanel, { view: { ...view, embedded: false }, busy: false, onLanOpen() {} }),
      ),
    ).not.toContain('role="switch"')
  })
})
