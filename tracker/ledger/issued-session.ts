import type { Price } from './pricing'
import type { RoutedTokens } from './receipt-terms'

/** A session as the tracker issued its routes: what its receipts are checked (step-check.ts) and paid against. */
export interface IssuedSession {
  readonly modelId: string
  readonly nLayer: number
  /** Priced once when the route is issued: looking the model up per receipt is slow. */
  readonly price: Price
  /**
   * `relayId`: the volunteer relay the route reached the host through (it is paid per frame, relay-fees.ts);
   * `standby`: the twins named to stand by for the hop (paid at the hold's end, standby.ts).
   */
  readonly hops: {
    readonly hostId: string
    readonly blocks: readonly [number, number]
    readonly relayId?: string
    readonly standby?: readonly string[]
  }[]
  accountId: string | null
  /** The node that asked for the route: only it may hand in the session's receipts over Socket.IO. */
  readonly issuedTo: string | null
  /**
   * That client's public key: every step it sent carries its signature,
   * and only a receipt embedding one is paid (null: routed without one).
   */
  readonly clientKey: string | null
  /**
   * What the client declared in route.plan, and the turns route.turn added: the tracker's own count of each step's
   * tokens comes from it.
   */
  routed: RoutedTokens | undefined
  /** Hops the client gave up on: their earnings here pay their replacements' replays. */
  readonly failed: { readonly hostId: string; readonly blocks: readonly [number, number] }[]
  lastUsed: number
}
