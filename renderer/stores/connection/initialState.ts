import type { ConnectionState } from '../../api/socketBridge'

export interface ConnectionStoreState {
  state: ConnectionState
}
