// Test helpers for the Electron adapter: a backend that answers through the real contract
// (dispatchAppCall parses inputs and outputs) with handlers a test provides.

import type { AppBackendHandle } from '../electron/main/backend'
import { type AppEventName, type AppHandlers, dispatchAppCall, type HostingStatus } from '../protocol/app'
import { NeuronError } from '../protocol/errors'

export interface FakeBackend extends AppBackendHandle {
  /** Pushes an event to every onEvent listener, as the host does. */
  emit(event: AppEventName | string, data: unknown): void
  readonly calls: Array<{ method: string; input: unknown }>
}

export function fakeBackend(handlers: Partial<AppHandlers>): FakeBackend {
  const listeners = new Set<(event: AppEventName, data: unknown) => void>()
  const calls: Array<{ method: string; input: unknown }> = []
  const table = new Proxy(handlers, {
    get: (target, method: string) =>
      target[method as keyof AppHandlers] ??
      (() => {
        throw new NeuronError('not_implemented', `the fake backend has no ${method}`)
      }),
  }) as AppHandlers
  return {
    calls,
    trackerUrl: 'http://127.0.0.1:7070',
    call(method, input) {
      calls.push({ method, input })
      return dispatchAppCall(table, method, input)
    },
    onEvent(listener) {
      listeners.add(listener)
      return () => listeners.delete(listener)
    },
    emit(event, data) {
      for (const listener of listeners) listener(event as AppEventName, data)
    },
    async close() {
      listeners.clear()
    },
  }
}

export const servingStatus: HostingStatus = {
  phase: 'serving',
  modelId: 'stories260k',
  blocks: [0, 5],
  artifacts: [],
  serving: {
    activeSessions: 1,
    maxSessions: 4,
    tokensPerSecond: 42.5,
    servedBlockTokens: 1200,
    startedAt: 1_700_000_000_000,
    endpoint: null,
  },
  error: null,
}
