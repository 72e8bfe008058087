import {
  type AppCallFrame,
  type AppEventData,
  AppEventFrame,
  type AppEventName,
  type AppInput,
  type AppMethod,
  type AppOutput,
  AppReplyFrame,
  type NeuronBridge,
  readAppEvent,
  readAppReply,
} from '../../protocol/app'
import { NeuronError } from '../../protocol/errors'

/** Checked like a method (bivariantly), so the DOM's `(ev: MessageEvent) => any` handlers fit. */
type Handler<E> = { bivarianceHack(event: E): void }['bivarianceHack']

/** The members of the browser's WebSocket this transport uses, so tests can hand in a fake. */
export interface SocketLike {
  readonly readyState: number
  send(data: string): void
  close(): void
  onopen: Handler<unknown> | null
  onclose: Handler<unknown> | null
  onerror: Handler<unknown> | null
  onmessage: Handler<{ data: unknown }> | null
}
export type SocketFactory = (url: string) => SocketLike

export type ConnectionState = 'connecting' | 'open' | 'reconnecting'

/** A NeuronBridge that also tells whether the backend is reachable now. */
export interface ConnectedBridge extends NeuronBridge {
  connection(): ConnectionState
  onConnection(listener: (state: ConnectionState) => void): () => void
  close(): void
  /** Set when the bridge can never connect, with the reason for the user. */
  readonly problem?: string
}

export interface SocketBridgeOptions {
  url: string
  connect: SocketFactory
  /** First retry delay, doubled on each failure up to maxBackoffMs. */
  minBackoffMs?: number
  maxBackoffMs?: number
  warn?: (message: string) => void
}

const OPEN = 1

interface PendingCall {
  method: AppMethod
  frame: string
  sent: boolean
  resolve: (value: unknown) => void
  reject: (error: Error) => void
}

type AnyListener = (data: unknown) => void

/**
 * The browser mode's bridge: AppCallFrame/AppReplyFrame/AppEventFrame over one WebSocket that reconnects with backoff.
 */
export function createSocketBridge(options: SocketBridgeOptions): ConnectedBridge {
  const minBackoff = options.minBackoffMs ?? 250
  const maxBackoff = options.maxBackoffMs ?? 5_000
  const warn = options.warn ?? ((message: string) => console.warn(message))
  const pending = new Map<number, PendingCall>()
  const listeners = new Map<string, Set<AnyListener>>()
  const connectionListeners = new Set<(state: ConnectionState) => void>()
  let state: ConnectionState = 'connecting'
  let socket: SocketLike | null = null
  let nextId = 1
  let backoff = minBackoff
  let retry: ReturnType<typeof setTimeout> | null = null
  let closed = false

  const setState = (next: ConnectionState) => {
    if (next === state) return
    state = next
    for (const listener of connectionListeners) listener(next)
  }

  const flush = () => {
    if (socket === null || socket.readyState !== OPEN) return
    for (const call of pending.values()) {
      if (call.sent) continue
      call.sent = true
      socket.send(call.frame)
    }
  }

  const rejectAll = () => {
    const calls = [...pending.values()]
    pending.clear()
    for (const call of calls) {
      call.reject(
        new NeuronError(
          'host_unreachable',
          `lost the connection to the Neuron host (${options.url}) before it answered ${call.method}; ` +
            `reconnecting, try again`,
          {
            method: call.method,
          },
        ),
      )
    }
  }

  const onReply = (frame: AppReplyFrame) => {
    const call = pending.get(frame.id)
    if (call === undefined) return warn(`neuron bridge: reply for unknown call id ${frame.id} dropped`)
    pending.delete(frame.id)
    try {
      call.resolve(
        readAppReply(call.method, frame.ok ? { ok: true, value: frame.value } : { ok: false, error: frame.error }),
      )
    } catch (error) {
      call.reject(error instanceof Error ? error : new Error(String(error)))
    }
  }

  const onEvent = (frame: AppEventFrame) => {
    const read = readAppEvent(frame.event, frame.data)
    if ('error' in read) return warn(`neuron bridge: event dropped: ${read.error}`)
    for (const listener of listeners.get(read.event) ?? []) {
      try {
        listener(read.data)
      } catch (error) {
        warn(`neuron bridge: a ${read.event} listener threw: ${error instanceof Error ? error.message : String(error)}`)
      }
    }
  }

  const onMessage = (raw: unknown) => {
    let json: unknown
    try {
      json = JSON.parse(typeof raw === 'string' ? raw : String(raw))
    } catch {
      return warn('neuron bridge: a frame that is not JSON was dropped')
    }
    const reply = AppReplyFrame.safeParse(json)
    if (reply.success) return onReply(reply.data)
    const event = AppEventFrame.safeParse(json)
    if (event.success) return onEvent(event.data)
    warn('neuron bridge: a frame that is neither a reply nor an event was dropped')
  }

  const scheduleRetry = () => {
    setState('reconnecting')
    retry = setTimeout(open, backoff)
    backoff = Math.min(backoff * 2, maxBackoff)
  }

  const open = () => {
    retry = null
    if (closed) return
    let current: SocketLike
    try {
      current = options.connect(options.url)
    } catch (error) {
      warn(`neuron bridge: cannot open ${options.url}: ${error instanceof Error ? error.message : String(error)}`)
      rejectAll()
      return scheduleRetry()
    }
    socket = current
    current.onopen = () => {
      if (socket !== current) return
      backoff = minBackoff
      setState('open')
      flush()
    }
    current.onmessage = (event) => {
      if (socket === current) onMessage(event.data)
    }
    current.onerror = () => {}
    current.onclose = () => {
      if (socket !== current) return
      socket = null
      rejectAll()
      if (!closed) scheduleRetry()
    }
  }

  open()

  return {
    call<M extends AppMethod>(method: M, input: AppInput<M>): Promise<AppOutput<M>> {
      return new Promise<AppOutput<M>>((resolve, reject) => {
        if (closed)
          return reject(
            new NeuronError('host_unreachable', `the connection to the Neuron host was closed; ${method} was not sent`),
          )
        const id = nextId++
        const frame: AppCallFrame = { kind: 'call', id, method, input }
        pending.set(id, {
          method,
          frame: JSON.stringify(frame),
          sent: false,
          resolve: resolve as (value: unknown) => void,
          reject,
        })
        flush()
      })
    },
    on<E extends AppEventName>(event: E, listener: (data: AppEventData<E>) => void): () => void {
      const set = listeners.get(event) ?? new Set<AnyListener>()
      listeners.set(event, set)
      const any = listener as AnyListener
      set.add(any)
      return () => set.delete(any)
    },
    connection: () => state,
    onConnection(listener) {
      connectionListeners.add(listener)
      return () => connectionListeners.delete(listener)
    },
    close() {
      closed = true
      if (retry !== null) clearTimeout(retry)
      const current = socket
      socket = null
      rejectAll()
      current?.close()
    },
  }
}
