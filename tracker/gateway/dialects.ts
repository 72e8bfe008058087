import type { ServerResponse } from 'node:http'
import type { GatewayError } from './errors'
import { endSseWithError } from './sse'

/** How one API's clients read an error: its body's shape, and how a stream that already began ends with one. */
export interface ErrorDialect {
  body(error: GatewayError): unknown
  /** Headers are sent: the error goes in the stream's own format, when the response is one, and the response ends. */
  endStream(res: ServerResponse, error: GatewayError): void
}

/** OpenAI's `{ error: { message, type, param, code } }`; a failed SSE stream's last event is that object. */
export const openAiDialect: ErrorDialect = {
  body: (e) => e.body(),
  endStream(res, e) {
    if (res.getHeader('content-type') === 'text/event-stream') endSseWithError(res, e)
    else res.end()
  },
}
