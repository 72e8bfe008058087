import type { AppEventData, AppEventName, AppInput, AppMethod, AppOutput, NeuronBridge } from '../../protocol/app'
import { NeuronError } from '../../protocol/errors'

export type FakeHandlers = { [M in AppMethod]?: (input: AppInput<M>) => AppOutput<M> | Promise<AppOutput<M>> }

export interface FakeBridge extends NeuronBridge {
  /** Every call the store made, in order. */
  calls: { method: AppMethod; input: unknown }[]
  /** Plays the backend pushing an event. */
  emit<E extends AppEventName>(event: E, data: AppEventData<E>): void
}

/** A stand-in backend for store tests: answers with the given handlers and records the calls. */
export function fakeBridge(handlers: FakeHandlers = {}): FakeBridge {
  const listeners = new Map<string, Set<(data: unknown) => void>>()
  const calls: FakeBridge['calls'] = []
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
  }
}
