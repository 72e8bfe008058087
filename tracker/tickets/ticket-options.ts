// What a tracker's ticket office is given: grants for new keys, bounds on plans, a private swarm's list, rent, keys.
import type { StoredHold } from '../ledger/credit-holds'

export interface TicketOfficeOptions {
  /**
   * Micro-credits a key without an account may claim once, for a proof of work (grant.challenge, grant.claim; default
   * $NEURON_NEW_KEY_GRANT_MICRO); absent, such a key is refused with `no_account`.
   */
  readonly newKeyGrantMicro?: number
  /** New accounts the grant may open per minute, over all keys (default 30). */
  readonly newAccountsPerMinute?: number
  /** Leading zero bits a grant's proof needs (default $NEURON_GRANT_WORK_BITS, else DEFAULT_GRANT_WORK_BITS). */
  readonly grantWorkBits?: number
  /**
   * Grants one IPv4 /24 or IPv6 /48 may take a day (default $NEURON_GRANTS_PER_PREFIX_PER_DAY, else
   * DEFAULT_GRANTS_PER_PREFIX_PER_DAY).
   */
  readonly grantsPerPrefixPerDay?: number
  /**
   * Sessions one account may have routed and not ended (nor idle
   * past HOLD_IDLE_MS) at once (default MAX_PLANS_PER_KEY).
   */
  readonly maxPlansPerKey?: number
  /** A private swarm's list: a key it does not admit gets no ticket (default: everyone). */
  readonly admits?: (publicKey: string) => boolean
  /** Charges a session's rent when its hold ends, up to `until` (tracker/ledger/rent.ts); absent, holding is free. */
  readonly rent?: { charge(hold: StoredHold, until: number): Promise<number> }
  /**
   * A host's public key, for the upstream hops a ticket names (a forwarded step's receipts are checked against them);
   * absent, tickets name none and hosts take no forwarded step.
   */
  readonly keyOf?: (hostId: string) => string | undefined
}

/** Plans one account may have outstanding: each holds credits and, until opened, a slot on every host of its route. */
export const MAX_PLANS_PER_KEY = 8

/** The options as given, else from $NEURON_NEW_KEY_GRANT_MICRO; `admits`: the swarm's admission. */
export function ticketOptions(
  options: TicketOfficeOptions,
  env: NodeJS.ProcessEnv,
  admits?: (publicKey: string) => boolean,
): TicketOfficeOptions {
  const envGrant = Number(env.NEURON_NEW_KEY_GRANT_MICRO)
  const newKeyGrantMicro =
    options.newKeyGrantMicro ?? (Number.isSafeInteger(envGrant) && envGrant > 0 ? envGrant : undefined)
  const grantWorkBits = options.grantWorkBits ?? envInt(env.NEURON_GRANT_WORK_BITS, 0)
  const grantsPerPrefixPerDay = options.grantsPerPrefixPerDay ?? envInt(env.NEURON_GRANTS_PER_PREFIX_PER_DAY, 1)
  return {
    ...(newKeyGrantMicro === undefined ? {} : { newKeyGrantMicro }),
    ...(grantWorkBits === undefined ? {} : { grantWorkBits }),
    ...(grantsPerPrefixPerDay === undefined ? {} : { grantsPerPrefixPerDay }),
    ...(options.newAccountsPerMinute === undefined ? {} : { newAccountsPerMinute: options.newAccountsPerMinute }),
    ...(options.maxPlansPerKey === undefined ? {} : { maxPlansPerKey: options.maxPlansPerKey }),
    ...(options.rent === undefined ? {} : { rent: options.rent }),
    ...(admits === undefined ? {} : { admits }),
  }
}

/** A whole number from the environment, at least `min`; undefined when unset or not one. */
function envInt(value: string | undefined, min: number): number | undefined {
  const n = Number(value)
  return value !== undefined && value !== '' && Number.isSafeInteger(n) && n >= min ? n : undefined
}
