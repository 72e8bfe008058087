import { z } from 'zod'
import { NeuronError } from './errors'
import { MAX_LABEL_CHARS, MAX_MESSAGE_CHARS } from './limits'

/** The error half of every acknowledgement: what went wrong, as data a program can branch on. */
export const WireError = z.object({
  code: z.string().max(MAX_LABEL_CHARS),
  message: z.string().max(MAX_MESSAGE_CHARS),
  details: z.record(z.string(), z.unknown()).optional(),
})
export type WireError = z.infer<typeof WireError>

export type Ack<T> = { ok: true; value: T } | { ok: false; error: WireError }

/** One request/acknowledgement pair carried by Socket.IO: both sides parse with the same schemas. */
export interface RpcEvent<Req extends z.ZodType, Res extends z.ZodType> {
  readonly request: Req
  readonly response: Res
}

export function rpc<Req extends z.ZodType, Res extends z.ZodType>(request: Req, response: Res): RpcEvent<Req, Res> {
  return { request, response }
}

export type RpcTable = Record<string, RpcEvent<z.ZodType, z.ZodType>>
export type RpcRequest<T extends RpcTable, K extends keyof T> = z.input<T[K]['request']>
export type RpcResponse<T extends RpcTable, K extends keyof T> = z.output<T[K]['response']>
export type RpcHandlers<T extends RpcTable, Ctx> = {
  [K in keyof T]: (
    request: z.output<T[K]['request']>,
    context: Ctx,
  ) => Promise<z.input<T[K]['response']>> | z.input<T[K]['response']>
}

/** The few members of a Socket.IO socket this module needs, so protocol/ imports no Socket.IO. */
export interface RpcSocket {
  on(event: string, listener: (...args: unknown[]) => void): unknown
  /** Every incoming event, the event's name first (Socket.IO's `onAny`). */
  onAny(listener: (event: unknown, ...args: unknown[]) => void): unknown
  timeout(ms: number): { emitWithAck(event: string, ...args: unknown[]): Promise<unknown> }
}

/** An error as it goes on the wire, its code and message cut to the bounds WireError parses with. */
export function toWireError(error: unknown): WireError {
  if (error instanceof NeuronError)
    return {
      code: clip(error.code, MAX_LABEL_CHARS),
      message: clip(error.message, MAX_MESSAGE_CHARS),
      details: { ...error.details },
    }
  const message = error instanceof Error ? error.message : String(error)
  return { code: 'internal', message: clip(`internal error: ${message}`, MAX_MESSAGE_CHARS) }
}

/** The first issues of a zod failure, as one line naming the event and each bad field. */
export function describeIssues(event: string, error: z.ZodError): string {
  const shown = error.issues
    .slice(0, 8)
    .map((i) => `${i.path.length === 0 ? '(payload)' : i.path.join('.')}: ${i.message}`)
  const more = error.issues.length > shown.length ? `; and ${error.issues.length - shown.length} more` : ''
  return clip(`${event}: ${shown.join('; ')}${more}`, MAX_MESSAGE_CHARS)
}

/** `text` cut to at most `max` characters, marked with an ellipsis when cut. */
function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`
}

/**
 * Serves every event of `table` on `socket`. Each payload is parsed before its handler runs; a
 * malformed one, an unknown event or a throwing handler gets a typed error ack, and the socket
 * keeps serving. Nothing a peer sends can throw out of a listener: an async listener's rejection
 * would be unhandled and end the process.
 */
export function serveRpc<T extends RpcTable, Ctx>(
  socket: RpcSocket,
  table: T,
  handlers: RpcHandlers<T, Ctx>,
  context: Ctx,
  onError?: (event: string, error: WireError) => void,
): void {
  const refuse = (event: string, error: WireError, reply?: (a: Ack<unknown>) => void) => {
    guarded(() => onError?.(event, error))
    if (reply !== undefined) guarded(() => reply({ ok: false, error }))
  }
  for (const [event, spec] of Object.entries(table)) {
    socket.on(event, (...args: unknown[]) => {
      const ack = args.at(-1)
      if (typeof ack !== 'function') {
        refuse(event, {
          code: 'no_ack',
          message: `${event} was sent without an acknowledgement callback; use emitWithAck`,
        })
        return
      }
      const reply = ack as (a: Ack<unknown>) => void
      const answer = async () => {
        const parsed = spec.request.safeParse(args.length > 1 ? args[0] : undefined)
        if (!parsed.success)
          return refuse(event, { code: 'bad_request', message: describeIssues(event, parsed.error) }, reply)
        const handler = handlers[event as keyof T] as (r: unknown, c: Ctx) => unknown
        const value = spec.response.parse(await handler(parsed.data, context))
        reply({ ok: true, value })
      }
      answer().catch((error: unknown) => refuse(event, toWireError(error), reply))
    })
  }
  // Events outside the table: a typed answer to a caller that waits for one, silence otherwise.
  socket.onAny((event: unknown, ...args: unknown[]) => {
    // Socket.IO also lets a number, or nothing but the ack callback, stand where the name goes.
    const name = typeof event === 'string' ? event : `(${typeof event})`
    if (Object.hasOwn(table, name)) return
    const ack = args.at(-1)
    const error = {
      code: 'unknown_event',
      message: `no event "${clip(name, 64)}" here; the events served are ${Object.keys(table).join(', ')}`,
    }
    refuse(clip(name, 64), error, typeof ack === 'function' ? (ack as (a: Ack<unknown>) => void) : undefined)
  })
}

/** Runs `f`, swallowing what it throws: for callbacks whose failure has nowhere to go (an ack to a gone peer). */
function guarded(f: () => void): void {
  try {
    f()
  } catch {}
}

const AckShape = z.union([
  z.object({ ok: z.literal(true), value: z.unknown() }),
  z.object({ ok: z.literal(false), error: WireError }),
])

/** Calls an event and returns its parsed value, or throws the peer's typed error as a NeuronError. */
export async function callRpc<T extends RpcTable, K extends keyof T & string>(
  socket: RpcSocket,
  table: T,
  event: K,
  request: RpcRequest<T, K>,
  timeoutMs = 30_000,
): Promise<RpcResponse<T, K>> {
  const spec = table[event] as T[K]
  const payload = spec.request.parse(request)
  let raw: unknown
  try {
    raw = await socket.timeout(timeoutMs).emitWithAck(event, payload)
  } catch (error) {
    // A socket that refused to send (a link to a host another
    // instance holds) says why; Socket.IO's own failure is a timeout.
    if (error instanceof NeuronError) throw error
    throw new NeuronError('timeout', `${event}: no answer within ${timeoutMs} ms; is the tracker reachable?`, {
      event,
      timeoutMs,
    })
  }
  const ack = AckShape.safeParse(raw)
  if (!ack.success) throw new NeuronError('bad_response', describeIssues(`${event} acknowledgement`, ack.error))
  if (!ack.data.ok) throw new NeuronError(ack.data.error.code, ack.data.error.message, ack.data.error.details ?? {})
  const value = spec.response.safeParse(ack.data.value)
  if (!value.success) throw new NeuronError('bad_response', describeIssues(`${event} response`, value.error))
  return value.data as RpcResponse<T, K>
}
