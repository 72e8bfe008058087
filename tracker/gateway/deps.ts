// What the gateway is configured with and what it uses of the tracker (types only, so the gateway's
// parts can share them without importing the class that wires them).
import type { IncomingMessage } from 'node:http'
import type { SwarmClient } from '../../client/swarm-client'
import type { HostChecksView } from '../../protocol'
import type { Accounts } from '../ledger/accounts'
import type { ApiRequests } from '../ledger/api-requests'
import type { CreditHolds } from '../ledger/credit-holds'
import type { LedgerStore } from '../ledger/ledger-store'
import type { Metering } from '../ledger/metering'
import type { PricingOptions } from '../ledger/pricing'
import type { ModelCatalog } from '../models/catalog'
import type { Reputation } from '../reputation/reputation'
import type { WindowCounter } from './rate-limit'

export interface GatewayOptions {
  /** Guards the /admin routes (`Authorization: Bearer <token>`); absent, they answer 403. */
  readonly adminToken?: string
  readonly pricing?: PricingOptions
  /** Requests per account per minute before 429 (default 120). */
  readonly requestsPerMinute?: number
  /** How long the swarm may go without a token before a generation is stopped with a 503 (default STALL_MS, 60 s). */
  readonly stallMs?: number
  /** Default max_tokens of a chat completion without one. */
  readonly defaultChatMaxTokens?: number
  /**
   * Whether a caller's request may start from the cache another caller's request left on the hosts when their prompts
   * begin alike (a shared system prompt prefilled once for everyone; default $NEURON_SHARED_PREFIXES === '1', else
   * false: each account starts only from its own). Shared, a caller can time whether someone sent a prompt beginning
   * with tokens it guesses (a faster first token), as with any shared prompt cache; never read it.
   */
  readonly sharedPrefixes?: boolean
}

export interface GatewayDeps {
  readonly catalog: ModelCatalog
  readonly accounts: Accounts
  readonly ledger: LedgerStore
  /** Credits set aside per account in the store, shared with the tracker's routed sessions and the other instances. */
  readonly holds: CreditHolds
  /** Each generation's account, model and tokens, for its account's request log (what it cost: the ledger). */
  readonly apiRequests: ApiRequests
  readonly metering: Metering
  readonly reputation: Reputation
  /** Tells the tracker the gateway's next session is paid by this account (before it is routed). */
  readonly sponsor?: (session: string, accountId: string) => void
  /** Whether the swarm admits this key (null: a caller without one): see Tracker.admits. */
  readonly admits: (publicKey: string | null) => boolean
  /**
   * The key a request proves with an `x-neuron-auth` header signed
   * for `scope`; undefined without one, a refusal when it is wrong.
   */
  /** Where the rate limit counts (default: this process's memory; Redis across instances). */
  readonly counter?: WindowCounter
  readonly provenKey: (req: IncomingMessage, scope: string) => Promise<string | undefined>
  /** The tracker's own client of its swarm, connected on first use. */
  readonly client: () => Promise<SwarmClient>
  /**
   * What the tracker's fraud checks say of a host (probes, audits, probation, a ban); absent: the dashboard shows null.
   */
  readonly checks?: (hostId: string) => Promise<HostChecksView>
  readonly log: (line: string) => void
}
