/*
 * The one stand-in for the `electron` module (the Fiddle way): this machine has Electron's types but
 * not its binary, so main and preload are tested in plain Node against this. It mimics what the tests
 * rely on, including the two copies Electron makes: IPC payloads are structured-cloned, and values
 * crossing contextBridge are copied the way electron_api_context_bridge.cc does (an Error keeps only
 * its message; a plain object keeps its enumerable own fields; functions and promises are proxied).
 * Tests use it with `vi.mock('electron', () => import('./electron'))`.
 */
import { EventEmitter } from 'node:events'
import { types } from 'node:util'

type InvokeHandler = (event: MockInvokeEvent, ...args: unknown[]) => unknown
interface MockInvokeEvent {
  sender: typeof webContents
  senderFrame: { url: string }
}

/** The page the mocked window shows: the app's own, unless a test navigates it elsewhere. */
export const APP_PAGE = 'file:///opt/neuron/dist/renderer/index.html'
let pageUrl = APP_PAGE

/** Points the mocked window at another page (as a navigation would), for tests of who may call. */
export function navigatePage(url: string): void {
  pageUrl = url
}

const handlers = new Map<string, InvokeHandler>()
const rendererEvents = new EventEmitter()

/** What `contextBridge.exposeInMainWorld` put on the page's `window`, as the page sees it. */
export const mainWorld: Record<string, unknown> = {}

/** A value as the other side of contextBridge receives it. */
export function copyAcrossBridge(value: unknown): unknown {
  if (typeof value === 'function') {
    const fn = value as (...args: unknown[]) => unknown
    return (...args: unknown[]) => {
      try {
        return copyAcrossBridge(fn(...args.map(copyAcrossBridge)))
      } catch (error) {
        throw copyAcrossBridge(error)
      }
    }
  }
  if (value === null || typeof value !== 'object') return value
  if (types.isPromise(value)) {
    return (value as Promise<unknown>).then(copyAcrossBridge, (reason: unknown) =>
      Promise.reject(copyAcrossBridge(reason)),
    )
  }
  if (types.isNativeError(value)) return new Error((value as Error).message)
  if (Array.isArray(value)) return value.map(copyAcrossBridge)
  if (
    types.isDate(value) ||
    types.isRegExp(value) ||
    types.isMap(value) ||
    types.isSet(value) ||
    ArrayBuffer.isView(value)
  )
    return structuredClone(value)
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, copyAcrossBridge(v)]))
}

export const contextBridge = {
  exposeInMainWorld(apiKey: string, api: unknown): void {
    if (Object.hasOwn(mainWorld, apiKey))
      throw new Error('Cannot bind an API on top of an existing property on the window object')
    mainWorld[apiKey] = copyAcrossBridge(api)
  },
}

export const ipcMain = {
  handle(channel: string, listener: InvokeHandler): void {
    if (handlers.has(channel)) throw new Error(`Attempted to register a second handler for '${channel}'`)
    handlers.set(channel, listener)
  },
  removeHandler(channel: string): void {
    handlers.delete(channel)
  },
}

export const ipcRenderer = {
  async invoke(channel: string, ...args: unknown[]): Promise<unknown> {
    const handler = handlers.get(channel)
    if (!handler)
      throw new Error(`Error invoking remote method '${channel}': Error: No handler registered for '${channel}'`)
    try {
      return structuredClone(
        await handler({ sender: webContents, senderFrame: { url: pageUrl } }, ...structuredClone(args)),
      )
    } catch (error) {
      throw new Error(`Error invoking remote method '${channel}': ${String(error)}`)
    }
  },
  on(channel: string, listener: (event: unknown, ...args: unknown[]) => void) {
    rendererEvents.on(channel, listener)
    return ipcRenderer
  },
  removeListener(channel: string, listener: (event: unknown, ...args: unknown[]) => void) {
    rendererEvents.removeListener(channel, listener)
    return ipcRenderer
  },
  listenerCount(channel: string): number {
    return rendererEvents.listenerCount(channel)
  },
}

let destroyed = false

/** The window's webContents: `send` reaches ipcRenderer's listeners with cloned arguments. */
export const webContents = {
  send(channel: string, ...args: unknown[]): void {
    if (destroyed) throw new Error('Object has been destroyed')
    rendererEvents.emit(channel, { sender: ipcRenderer }, ...structuredClone(args))
  },
  isDestroyed(): boolean {
    return destroyed
  },
  destroy(): void {
    destroyed = true
  },
}

/** Back to a fresh page and a main process with no handlers. */
export function resetElectronMock(): void {
  handlers.clear()
  rendererEvents.removeAllListeners()
  for (const key of Object.keys(mainWorld)) delete mainWorld[key]
  destroyed = false
  pageUrl = APP_PAGE
}

export default { contextBridge, ipcMain, ipcRenderer, webContents }
