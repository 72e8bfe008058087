import { createStore } from 'zustand/vanilla'
import type { ConnectedBridge } from '../../api/socketBridge'
import type { ConnectionStoreState } from './initialState'

/**
 * Mirrors the bridge's connection and the backend's link to its tracker (swarm.status, asked again on
 * every (re)connection, then pushed), so the status badge and the app's readiness can follow them.
 */
export function createConnectionStore(bridge: ConnectedBridge) {
  const store = createStore<ConnectionStoreState>()(() => ({ state: bridge.connection(), tracker: null }))
  const askTracker = () => {
    bridge
      .call('swarm.status', {})
      .then((tracker) => store.setState({ tracker }))
      .catch(() => {})
  }
  bridge.onConnection((state) => {
    // What the backend said of its tracker is stale once the backend itself is out of reach.
    store.setState(state === 'open' ? { state } : { state, tracker: null })
    if (state === 'open') askTracker()
  })
  bridge.on('swarm.status', (tracker) => store.setState({ tracker }))
  if (bridge.connection() === 'open') askTracker()
  return store
}
