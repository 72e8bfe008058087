import { randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { MessagesRequest } from './anthropic-schemas'
import { anthropicChat, anthropicContent, stopReason } from './anthropic-translate'
import type { ErrorDialect } from './dialects'
import type { GatewayError } from './errors'
import { collect } from './generation'
import { abortOnClose, bearer, parse, sendJson } from './http'
import { startSse } from './sse'
import type { ForeignParams, TranslatedGenerations } from './translated-generations'

const HOW_TO_SEND_KEY = 'send your Neuron API key as x-api-key: nk-… (new Anthropic({ apiKey, baseURL })) or Authorization: Bearer nk-…'
const PARAMS: ForeignParams = { messages: 'messages', tools: 'tools', format: 'tools' }

/** Anthropic's error type for each status the gateway answers (docs: "Errors"); 503 is Anthropic's overloaded. */
function errorType(status: GatewayError['status']): string {
  const types: Partial<Record<GatewayError['status'], string>> = {
    400: 'invalid_request_error',
    401: 'authentication_error',
    402: 'billing_error',
    403: 'permission_error',
    404: 'not_found_error',
    429: 'rate_limit_error',
    503: 'overloaded_error',
  }
  return types[status] ?? 'api_error'
}

/** Anthropic's `{"type":"error","error":{"type","message"}}`; a failed stream ends with it as an `error` event. */
export const anthropicDialect: ErrorDialect = {
  body: (e) => ({ type: 'error', error: { type: errorType(e.status), message: e.message } }),
  endStream(res, e) {
    if (res.getHeader('content-type') === 'text/event-stream') event(res, 'error', anthropicDialect.body(e))
    res.end()
  },
}

/** Anthropic's Messages API, POST /v1/messages: one answer as a message, or streamed as its SSE events. */
export class AnthropicEndpoints {
  constructor(private readonly translated: TranslatedGenerations) {}

  async messages(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const key = req.headers['x-api-key']
    const account = await this.translated.admit(typeof key === 'string' && key !== '' ? key : bearer(req), HOW_TO_SEND_KEY)
    const body = parse(MessagesRequest, await this.translated.body(req, 'messages'))
    const generation = await this.translated.chat(account, anthropicChat(body), PARAMS, false, 'anthropic.messages')
    const input_tokens = generation.promptTokens.length
    const message = { id: `msg_${randomBytes(12).toString('hex')}`, type: 'message', role: 'assistant', model: body.model }
    const stream = this.translated.run(account, generation, abortOnClose(res))
    if (body.stream !== true) {
      const done = await collect(stream)
      const answer = { content: done.text, finish_reason: done.finishReason, ...(done.stopSequence === undefined ? {} : { stop_sequence: done.stopSequence }) }
      sendJson(res, 200, { ...message, content: anthropicContent(answer), ...stopReason(answer), usage: usage(input_tokens, done.completionTokens) })
      return
    }
    // Started once the first text or finish is there: an error before it gets its own status.
    let next = await stream.next()
    startSse(res)
    event(res, 'message_start', {
      type: 'message_start',
      message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: usage(input_tokens, 0) },
    })
    event(res, 'content_block_start', { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } })
    event(res, 'ping', { type: 'ping' })
    for (; !next.done; next = await stream.next()) {
      const c = next.value
      if (!('done' in c)) {
        if (c.text !== '') event(res, 'content_block_delta', { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: c.text } })
        continue
      }
      event(res, 'content_block_stop', { type: 'content_block_stop', index: 0 })
      const reason = stopReason({ finish_reason: c.finishReason, ...(c.stopSequence === undefined ? {} : { stop_sequence: c.stopSequence }) })
      event(res, 'message_delta', { type: 'message_delta', delta: reason, usage: { input_tokens, output_tokens: c.completionTokens } })
      event(res, 'message_stop', { type: 'message_stop' })
      res.end()
      return
    }
    throw new Error('the generation ended without a finish')
  }
}

function usage(input_tokens: number, output_tokens: number) {
  return { input_tokens, output_tokens, cache_creation_input_tokens: null, cache_read_input_tokens: null, server_tool_use: null, service_tier: null }
}

function event(res: ServerResponse, name: string, data: unknown): void {
  res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`)
}
