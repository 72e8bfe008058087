import type { AppEventName } from '../../protocol/app'
import type { Ack } from '../../protocol/rpc'
import { AppBackend, type AppBackendOptions } from '../backend/backend'

/** What main needs of the host backend: calls in, events out, close. Tests pass a fake (testing.ts). */
export interface AppBackendHandle {
  call(method: string, input: unknown): Promise<Ack<unknown>>
  onEvent(listener: (event: AppEventName, data: unknown) => void): () => void
  readonly trackerUrl: string
  close(): Promise<void>
}

export function startAppBackend(options: AppBackendOptions): Promise<AppBackendHandle> {
  return AppBackend.start(options)
}
