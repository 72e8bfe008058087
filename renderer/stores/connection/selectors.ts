import type { ConnectionState } from '../../api/socketBridge'

export function connectionText(state: ConnectionState): string {
  if (state === 'open') return 'Connected'
  if (state === 'reconnecting') return 'Reconnecting…'
  return 'Connecting…'
}
