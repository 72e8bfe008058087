import type { NeuronBridge } from '../../protocol/app'
import { NeuronError } from '../../protocol/errors'
import { type ConnectedBridge, type ConnectionState, createSocketBridge } from './socketBridge'

declare global {
  interface Window {
    /** Exposed by Electron's preload; absent in a plain browser. */
    neuron?: NeuronBridge
  }
}

/** Electron's IPC bridge is always there, so its connection never changes. */
function alwaysOpen(bridge: NeuronBridge): ConnectedBridge {
  return {
    call: (method, input) => bridge.call(method, input),
    on: (event, listener) => bridge.on(event, listener),
    connection: (): ConnectionState => 'open',
    onConnection: () => () => {},
    close: () => {},
  }
}

/** A page opened from a file outside Electron has no backend to reach; it says so instead of retrying forever. */
function detached(problem: string): ConnectedBridge {
  return {
    call: (method) => Promise.reject(new NeuronError('host_unreachable', `${method}: ${problem}`)),
    on: () => () => {},
    connection: (): ConnectionState => 'connecting',
    onConnection: () => () => {},
    close: () => {},
    problem,
  }
}

/** The preload's bridge in Electron, otherwise the WebSocket on the page's own origin at /api. */
export function connectBridge(): ConnectedBridge {
  if (window.neuron !== undefined) return alwaysOpen(window.neuron)
  if (location.host === '')
    return detached(
      'this page was opened from a file without the Neuron app; run `neuron app` and open the address it prints.',
    )
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws'
  return createSocketBridge({ url: `${scheme}://${location.host}/api`, connect: (url) => new WebSocket(url) })
}
