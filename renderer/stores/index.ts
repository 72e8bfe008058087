import type { ConnectedBridge } from '../api/socketBridge'
import { createApiAccessStore } from './api/store'
import { createAppearanceStore } from './appearance/store'
import { createChatStore } from './chat/store'
import { createComputerStore } from './computer/store'
import { createConnectionStore } from './connection/store'
import { createEarningsStore } from './earnings/store'
import { createHostingStore } from './hosting/store'
import { createHubStore } from './hub/store'
import { createLanStore } from './lan/store'
import { createLogStore } from './log/store'
import { createReputationStore } from './reputation/store'
import { createSettingsStore } from './settings/store'
import { createSwarmStore } from './swarm/store'

/** Every store of the app, built over one bridge. */
export function createStores(bridge: ConnectedBridge) {
  return {
    connection: createConnectionStore(bridge),
    computer: createComputerStore(bridge),
    hosting: createHostingStore(bridge),
    hub: createHubStore(bridge),
    earnings: createEarningsStore(bridge),
    reputation: createReputationStore(bridge),
    chat: createChatStore(bridge, { legacy: localStorage }),
    swarm: createSwarmStore(bridge),
    lan: createLanStore(bridge),
    settings: createSettingsStore(bridge),
    api: createApiAccessStore(bridge),
    appearance: createAppearanceStore(localStorage),
    log: createLogStore(bridge),
  }
}
export type Stores = ReturnType<typeof createStores>
