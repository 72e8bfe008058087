import type { IncomingMessage, ServerResponse } from 'node:http'
import type { z } from 'zod'
import { badRequest, GatewayError } from './errors'

export const MAX_BODY_BYTES = 4 * 1024 * 1024

/**
 * The request body as JSON, refused (400) when it does not parse or past `maxBytes`: by its Content-Length
 * before a byte is read, else as soon as it passes (the rest is discarded unparsed). `tooLarge` says why.
 */
export async function readBody(
  req: IncomingMessage,
  maxBytes = MAX_BODY_BYTES,
  tooLarge = (max: number) =>
    new GatewayError(400, 'invalid_request_error', 'body_too_large', `request bodies are at most ${max} bytes.`),
): Promise<unknown> {
  if (Number(req.headers['content-length'] ?? 0) > maxBytes) throw tooLarge(maxBytes)
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of req) {
    size += (chunk as Buffer).length
    if (size > maxBytes) throw tooLarge(maxBytes)
    chunks.push(chunk as Buffer)
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch {
    throw new GatewayError(400, 'invalid_request_error', 'invalid_json', 'the request body is not JSON.')
  }
}

/** `raw` as `schema`'s output, or a 400 that names the first wrong field. */
export function parse<T extends z.ZodType>(schema: T, raw: unknown): z.output<T> {
  const parsed = schema.safeParse(raw)
  if (!parsed.success) throw badRequest(parsed.error)
  return parsed.data
}

/** The token of `Authorization: Bearer <token>`, if the request sent one. */
export function bearer(req: IncomingMessage): string | undefined {
  const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')
  return m?.[1]
}

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  res.writeHead(status, { 'content-type': 'application/json' })
  res.end(JSON.stringify(body))
}

export function sendError(res: ServerResponse, error: GatewayError): void {
  sendJson(res, error.status, error.body())
}

/** Aborted when the caller hangs up before the response is finished: the swarm stops at the next step. */
export function abortOnClose(res: ServerResponse): AbortSignal {
  const controller = new AbortController()
  res.on('close', () => {
    if (!res.writableFinished) controller.abort()
  })
  return controller.signal
}

/**
 * `handle`, answering 500 when it throws: a route that throws must not end the tracker (an uncaught exception would).
 */
export function guarded(
  handle: (req: IncomingMessage, res: ServerResponse) => void,
  log: (line: string) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    try {
      handle(req, res)
    } catch (error) {
      log(`${req.method} ${(req.url ?? '').slice(0, 200)} failed: ${error instanceof Error ? error.message : error}`)
      if (res.headersSent) res.destroy()
      else
        sendJson(res, 500, {
          error: { code: 'internal', message: 'the tracker failed to answer this request; it keeps serving.' },
        })
    }
  }
}
