import { IPC_CALL, IPC_EVENT } from '../../protocol/app'
import type { Ack } from '../../protocol/rpc'
import { toWireError } from '../../protocol/rpc'
import type { AppBackendHandle } from './backend'

/** The members of Electron's ipcMain the wiring uses. */
export interface IpcMainLike {
  handle(channel: string, listener: (event: unknown, ...args: unknown[]) => unknown): void
  removeHandler(channel: string): void
}

/** The window's webContents, or whatever receives pushed events. */
export interface EventSender {
  send(channel: string, ...args: unknown[]): void
  isDestroyed(): boolean
}

/** The URL of the frame a call came from (Electron's `event.senderFrame.url`), if it says. */
function senderUrl(event: unknown): string | undefined {
  if (typeof event !== 'object' || event === null || !('senderFrame' in event)) return undefined
  const frame = event.senderFrame
  return typeof frame === 'object' && frame !== null && 'url' in frame && typeof frame.url === 'string'
    ? frame.url
    : undefined
}

/**
 * Connects the renderer to the backend: every IPC_CALL runs backend.call (which answers an Ack and
 * never throws), and every backend event is pushed on IPC_EVENT to the current window, if any.
 * Calls are answered only from the app's own page (`appUrl`, the renderer's index.html): a frame
 * that navigated elsewhere must not reach the host. Returns the function that undoes both.
 */
export function wireAppIpc(
  ipcMain: IpcMainLike,
  backend: Pick<AppBackendHandle, 'call' | 'onEvent'>,
  sender: () => EventSender | null,
  appUrl: string,
): () => void {
  ipcMain.handle(IPC_CALL, async (event, method, input): Promise<Ack<unknown>> => {
    const from = senderUrl(event)
    if (from === undefined || from.split('#')[0] !== appUrl) {
      return {
        ok: false,
        error: {
          code: 'forbidden',
          message: `calls are answered only from the app's own page, not from ${from ?? 'an unknown frame'}`,
        },
      }
    }
    if (typeof method !== 'string')
      return {
        ok: false,
        error: { code: 'bad_request', message: `a call names its method as a string, got ${typeof method}` },
      }
    try {
      return await backend.call(method, input)
    } catch (error) {
      return { ok: false, error: toWireError(error) }
    }
  })
  const unsubscribe = backend.onEvent((event, data) => {
    const target = sender()
    if (target && !target.isDestroyed()) target.send(IPC_EVENT, event, data)
  })
  return () => {
    unsubscribe()
    ipcMain.removeHandler(IPC_CALL)
  }
}
