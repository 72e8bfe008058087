import { randomBytes } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { MessagesRequest } from './anthropic-schemas'
import { anthropicChat, anthropicContent, stopReason } from './anthropic-translate'
import { collect } from './chunks'
import type { ErrorDialect } from './dialects'
import type { GatewayError } from './errors'
import { abortOnClose, bearer, parse, sendJson } from './http'
import { startSse } from './sse'
import type { ForeignParams, TranslatedGenerations } from './translated-generations'

const HOW_TO_SEND_KEY =
  'send your Neuron API key as x-api-key: nk-… (new Anthropic({ apiKey, baseURL })) or Authorization: Bearer nk-…'
const PARAMS: ForeignParams = { messages: 'messages', tools: 'tools', format: 'output_config.format' }

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
    const account = await this.translated.admit(
      typeof key === 'string' && key !== '' ? key : bearer(req),
      HOW_TO_SEND_KEY,
    )
    const body = parse(MessagesRequest, await this.translated.body(req, 'messages'))
    const chat = await this.translated.chat(account, anthropicChat(body), PARAMS, false, 'anthropic.messages')
    const input_tokens = chat.promptTokens
    const message = {
      id: `msg_${randomBytes(12).toString('hex')}`,
      type: 'message',
      role: 'assistant',
      model: body.model,
    }
    const stream = this.translated.run(account, chat, abortOnClose(res))
    const answerOf = (text: string, done: { finishReason: 'stop' | 'length'; stopSequence?: string }) => {
      const a = chat.answer(text, done.finishReason)
      const openAi = {
        content: a.content ?? '',
        finish_reason: a.finishReason,
        ...(a.toolCalls === undefined ? {} : { tool_calls: a.toolCalls }),
      }
      return {
        content: anthropicContent(openAi),
        reason: stopReason({
          ...openAi,
          ...(done.stopSequence === undefined ? {} : { stop_sequence: done.stopSequence }),
        }),
      }
    }
    if (body.stream !== true) {
      const done = await collect(stream)
      const { content, reason } = answerOf(done.text, done)
      const cached = done.cachedTokens
      const used = usage(input_tokens - cached, done.completionTokens, cached)
      sendJson(res, 200, { ...message, content, ...reason, usage: used })
      return
    }
    // Started once the first text or finish is there: an error before it gets its own status.
    let next = await stream.next()
    startSse(res)
    event(res, 'message_start', {
      type: 'message_start',
      message: { ...message, content: [], stop_reason: null, stop_sequence: null, usage: usage(input_tokens, 0) },
    })
    // Text streams as it comes; an answer that may be tool calls is held until it ends, then sent block by block.
    if (chat.streamsText)
      event(res, 'content_block_start', {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'text', text: '' },
      })
    event(res, 'ping', { type: 'ping' })
    let text = ''
    for (; !next.done; next = await stream.next()) {
      const c = next.value
      if (!('done' in c)) {
        text += c.text
        if (chat.streamsText && c.text !== '') textDelta(res, 0, c.text)
        continue
      }
      const { content, reason } = answerOf(text, c)
      if (chat.streamsText) event(res, 'content_block_stop', { type: 'content_block_stop', index: 0 })
      else
        content.forEach((block, index) => {
          streamBlock(res, index, block)
        })
      event(res, 'message_delta', {
        type: 'message_delta',
        delta: reason,
        // as Anthropic counts: input_tokens those not read from a cache
        usage: {
          input_tokens: input_tokens - (c.cachedTokens ?? 0),
          output_tokens: c.completionTokens,
          ...((c.cachedTokens ?? 0) > 0 ? { cache_read_input_tokens: c.cachedTokens } : {}),
        },
      })
      event(res, 'message_stop', { type: 'message_stop' })
      res.end()
      return
    }
    throw new Error('the generation ended without a finish')
  }
}

/** A whole content block as Anthropic streams one: its start, its text or its input's JSON as one delta, its stop. */
function streamBlock(res: ServerResponse, index: number, block: ReturnType<typeof anthropicContent>[number]): void {
  if (block.type === 'text') {
    event(res, 'content_block_start', { type: 'content_block_start', index, content_block: { type: 'text', text: '' } })
    if (block.text !== '') textDelta(res, index, block.text)
  } else {
    event(res, 'content_block_start', { type: 'content_block_start', index, content_block: { ...block, input: {} } })
    const delta = { type: 'input_json_delta', partial_json: JSON.stringify(block.input) }
    event(res, 'content_block_delta', { type: 'content_block_delta', index, delta })
  }
  event(res, 'content_block_stop', { type: 'content_block_stop', index })
}

function textDelta(res: ServerResponse, index: number, text: string): void {
  event(res, 'content_block_delta', { type: 'content_block_delta', index, delta: { type: 'text_delta', text } })
}

/** Anthropic's usage: `input_tokens` those not read from a cache, `cached` those that were (a shared prefix's). */
function usage(input_tokens: number, output_tokens: number, cached = 0) {
  return {
    input_tokens,
    output_tokens,
    cache_creation_input_tokens: null,
    cache_read_input_tokens: cached > 0 ? cached : null,
    server_tool_use: null,
    service_tier: null,
  }
}

function event(res: ServerResponse, name: string, data: unknown): void {
  res.write(`event: ${name}\ndata: ${JSON.stringify(data)}\n\n`)
}
