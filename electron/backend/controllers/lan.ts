import type { LanPresence } from '../lan/presence'
import type { GroupHandlers } from './registry'

/** The home network: apps found, pairing with one of them. */
export class LanController {
  readonly handlers: GroupHandlers<'lan'> = {
    'lan.get': () => this.presence.view(),
    'lan.pair': ({ key }) => this.presence.pair(key),
    'lan.confirm': ({ pairingId }) => this.presence.confirm(pairingId),
    'lan.refuse': ({ pairingId }) => this.presence.refuse(pairingId),
  }

  constructor(private readonly presence: LanPresence) {}
}
