import { createStore } from 'zustand/vanilla'
import type { ConnectedBridge } from '../../api/socketBridge'
import type { ConnectionStoreState } from './initialState'

/** Mirrors the bridge's connection so the status line and the app's readiness can follow it. */
export function createConnectionStore(bridge: ConnectedBridge) {
  const store = createStore<ConnectionStoreState>()(() => ({ state: bridge.connection() }))
  bridge.onConnection((state) => store.setState({ state }))
  return store
}
