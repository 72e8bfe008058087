import type { TrackerLinkStatus } from '../../../protocol/app'
import type { ConnectionState } from '../../api/socketBridge'

export interface ConnectionStoreState {
  /** The app's own backend: the bridge's connection. */
  state: ConnectionState
  /** The backend's link to its tracker, as it last said; null until it has (and while the backend is unreachable). */
  tracker: TrackerLinkStatus | null
}
