import {
  type AppEventData,
  type AppEventName,
  type AppInput,
  type AppMethod,
  type AppOutput,
  IPC_CALL,
  IPC_EVENT,
  type NeuronBridge,
  readAppEvent,
  readAppReply,
} from '../../protocol/app'
import { NeuronError } from '../../protocol/errors'

/** The members of Electron's ipcRenderer the bridge uses (the real one, or the mock in tests). */
export interface BridgeIpc {
  invoke(channel: string, ...args: unknown[]): Promise<unknown>
  on(channel: string, listener: (event: unknown, ...args: unknown[]) => void): unknown
  removeListener(channel: string, listener: (event: unknown, ...args: unknown[]) => void): unknown
}

/**
 * How a failed call reaches the renderer. contextBridge copies a rejected Error as `new Error(message)`
 * and drops every other property (electron_api_context_bridge.cc, IsNativeError), so `code` would be
 * lost; a plain object crosses with all its enumerable fields. renderer/api can rewrap it with
 * `new NeuronError(e.code, e.message, e.details)`.
 */
export interface BridgeFailure {
  name: 'NeuronError'
  code: string
  message: string
  details: Record<string, unknown>
}

function toBridgeFailure(error: unknown): BridgeFailure {
  if (error instanceof NeuronError)
    return { name: 'NeuronError', code: error.code, message: error.message, details: { ...error.details } }
  const message = error instanceof Error ? error.message : String(error)
  return {
    name: 'NeuronError',
    code: 'internal',
    message: `internal error in the preload bridge: ${message}`,
    details: {},
  }
}

/** The typed API the preload exposes as `window.neuron`: exactly `call` and `on`, nothing of Electron or Node. */
export function createNeuronBridge(ipc: BridgeIpc): NeuronBridge {
  async function call<M extends AppMethod>(method: M, input: AppInput<M>): Promise<AppOutput<M>> {
    let ack: unknown
    try {
      ack = await ipc.invoke(IPC_CALL, method, input)
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error)
      throw toBridgeFailure(
        new NeuronError('ipc_failed', `${method}: the app's main process did not answer (${reason}); restart Neuron`, {
          method,
        }),
      )
    }
    try {
      return readAppReply(method, ack)
    } catch (error) {
      throw toBridgeFailure(error)
    }
  }

  function on<E extends AppEventName>(event: E, listener: (data: AppEventData<E>) => void): () => void {
    const onMessage = (_event: unknown, name: unknown, data: unknown) => {
      if (name !== event) return
      const parsed = readAppEvent(event, data)
      if ('error' in parsed) {
        console.warn(`neuron: dropped a malformed ${event} event: ${parsed.error}`)
        return
      }
      listener(parsed.data as AppEventData<E>)
    }
    ipc.on(IPC_EVENT, onMessage)
    return () => {
      ipc.removeListener(IPC_EVENT, onMessage)
    }
  }

  return { call, on }
}
