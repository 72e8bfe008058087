import type { z } from 'zod'
import { NeuronError } from '../../protocol'

/** An error in OpenAI's shape: `{ error: { message, type, param, code } }` with its HTTP status. */
export class GatewayError extends Error {
  constructor(
    readonly status: 400 | 401 | 402 | 403 | 404 | 405 | 429 | 500 | 503,
    readonly type: string,
    readonly code: string | null,
    message: string,
    readonly param: string | null = null,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(message)
  }

  body() {
    return { error: { message: this.message, type: this.type, param: this.param, code: this.code, ...this.extra } }
  }
}

export function badRequest(error: z.ZodError): GatewayError {
  const first = error.issues[0]
  const param = first === undefined || first.path.length === 0 ? null : first.path.join('.')
  const fields = error.issues
    .map((i) => `${i.path.length === 0 ? '(body)' : i.path.join('.')}: ${i.message}`)
    .join('; ')
  return new GatewayError(400, 'invalid_request_error', 'invalid_value', `invalid request: ${fields}`, param)
}

/** Maps the swarm's typed errors to the status a caller can act on. */
export function fromNeuronError(error: unknown): GatewayError {
  if (error instanceof GatewayError) return error
  if (error instanceof NeuronError) {
    if (error.code === 'unknown_model')
      return new GatewayError(404, 'invalid_request_error', 'model_not_found', error.message, 'model')
    if (error.code === 'no_route') {
      const uncovered = Array.isArray(error.details.uncovered) ? error.details.uncovered : []
      return new GatewayError(
        503,
        'service_unavailable',
        'no_route',
        `no complete route right now: ${error.message}`,
        null,
        { uncovered_blocks: uncovered },
      )
    }
    if (error.code === 'bad_request')
      return new GatewayError(400, 'invalid_request_error', 'invalid_value', error.message)
    return new GatewayError(
      503,
      'service_unavailable',
      error.code,
      `the swarm could not serve this request: ${error.message}`,
    )
  }
  return new GatewayError(
    500,
    'server_error',
    'internal',
    `internal error: ${error instanceof Error ? error.message : String(error)}`,
  )
}
