import type { StoreApi } from 'zustand/vanilla'
import { streamingAnswerIds } from '../chat/selectors'
import type { ChatStore } from '../chat/store'
import type { EarningsStore } from '../earnings/store'
import type { HostingStore } from '../hosting/store'
import type { ConnectionStoreState } from './initialState'

/** The stores a reconnection touches (typed one by one: stores/index.ts needs the DOM's localStorage). */
export interface CatchUpStores {
  connection: StoreApi<ConnectionStoreState>
  chat: StoreApi<ChatStore>
  hosting: StoreApi<HostingStore>
  earnings: StoreApi<EarningsStore>
}

/**
 * Catches up on what a dropped connection hid: events pushed while the browser mode's WebSocket was
 * down are lost, so on reconnecting the answers that were streaming are ended (their chat.done may be
 * gone for good) and hosting status and earnings are asked for again. App reloads settings on every
 * (re)connection. Returns the unsubscribe.
 */
export function catchUpOnReconnect(stores: CatchUpStores): () => void {
  // The answers streaming when the connection dropped. They are ended only once it is back: an answer
  // asked for while it was down is queued and sent then, so its events will come.
  let cut: string[] = []
  return stores.connection.subscribe(({ state }, previous) => {
    if (previous.state === 'open' && state !== 'open') cut = streamingAnswerIds(stores.chat.getState().conversations)
    if (previous.state !== 'reconnecting' || state !== 'open') return
    stores.chat.getState().interrupt(cut)
    cut = []
    void stores.hosting.getState().loadStatus()
    if (stores.earnings.getState().earnings !== null) void stores.earnings.getState().load()
  })
}
