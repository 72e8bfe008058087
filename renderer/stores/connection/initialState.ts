import type { ConnectionState } from '../../api/socketBridge'

export interface ConnectionStoreState {
  state: ConnectionState
}

export const initialConnectionState: ConnectionStoreState = { state: 'connecting' }
