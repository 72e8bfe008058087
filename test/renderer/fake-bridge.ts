import type { AppEventData, AppEventName, AppInput, AppMethod, AppOutput } from '../../protocol/app'
import { NeuronError } from '../../protocol/errors'
import type { ConnectedBridge, ConnectionState } from '../../renderer/api/socketBridge'

export type FakeHandlers = { [M in AppMethod]?: (input: AppInput<M>) => AppOutput<M> | Promise<AppOutput<M>> }

export interface FakeBridge extends ConnectedBridge {
  /** Every call the store made, in order. */
  calls: { method: AppMethod; input: unknown }[]
  /** Plays the backend pushing an event. */
  emit<E extends AppEventName>(event: E, data: AppEventData<E>): void
  /** Plays the connection changing (the browser mode's WebSocket dropping and coming back). */
  setConnection(state: ConnectionState): void
}

/** A stand-in backend for store tests: answers with the given handlers and records the calls. Starts connected. */
export function fakeBridge(handlers: FakeHandlers = {}): FakeBridge {
  const listeners = new Map<string, Set<(data: unknown) => void>>()
  const connectionListeners = new Set<(state: ConnectionState) => void>()
  const calls: FakeBridge['calls'] = []
  let connection: ConnectionState = 'open'
  return {
    calls,
    async call<M extends AppMethod>(method: M, input: AppInput<M>): Promise<AppOutput<M>> {
      calls.push({ method, input })
      const handler = handlers[method] as ((input: AppInput<M>) => AppOutput<M> | Promise<AppOutput<M>>) | undefined
      if (handler === undefined) throw new NeuronError('bad_request', `the fake backend does not answer ${method}`)
      return handler(input)
    },
    on<E extends AppEventName>(event: E, listener: (data: AppEventData<E>) => void) {
      const set = listeners.get(event) ?? new Set()
      listeners.set(event, set)
      const any = listener as (data: unknown) => void
      set.add(any)
      return () => set.delete(any)
    },
    emit(event, data) {
      for (const listener of listeners.get(event) ?? []) listener(data)
    },
    connection: () => connection,
    onConnection(listener) {
      connectionListeners.add(listener)
      return () => connectionListeners.delete(listener)
    },
    setConnection(state) {
      if (state === connection) return
      connection = state
      for (const listener of connectionListeners) listener(state)
    },
    close() {},
  }
}
