// Calls into an AppBackend as the renderer makes them, for the backend's tests: answers parsed with the app protocol's
// schemas, and refusals returned as the wire error the UI would show.
import type { AppBackend } from '../electron/backend/backend'
import { type AppInput, type AppMethod, type AppOutput, readAppReply, type WireError } from '../protocol'

export function backendCalls(backend: () => AppBackend) {
  return {
    /** The method's answer, parsed; throws the error when it is refused. */
    async call<M extends AppMethod>(method: M, input: AppInput<M>): Promise<AppOutput<M>> {
      return readAppReply(method, await backend().call(method, input))
    },
    /** The error a call that must be refused gets; throws when it succeeds. */
    async failure(method: string, input: unknown): Promise<WireError> {
      const ack = await backend().call(method, input)
      if (ack.ok) throw new Error(`${method} succeeded: ${JSON.stringify(ack.value)}`)
      return ack.error
    },
  }
}
