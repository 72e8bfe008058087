import { timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { Accounts } from '../ledger/accounts'
import type { StoredAccount } from '../ledger/ledger-store'
import { GatewayError } from './errors'
import { bearer } from './http'

/** The account whose API key the request carries (`Authorization: Bearer nk-…`); 401 without a known one. */
export function authenticate(req: IncomingMessage, accounts: Accounts): StoredAccount {
  const key = bearer(req)
  if (key === undefined) {
    throw new GatewayError(
      401,
      'invalid_request_error',
      'missing_api_key',
      'no API key: send Authorization: Bearer nk-… (ask the tracker operator for an account).',
    )
  }
  const account = accounts.byApiKey(key)
  if (account === undefined)
    throw new GatewayError(401, 'invalid_request_error', 'invalid_api_key', `API key ${key.slice(0, 6)}… is not known to this tracker.`)
  return account
}

/** Passes only a request bearing the operator's admin token; without a configured token the admin routes are off (403). */
export function requireAdmin(req: IncomingMessage, adminToken: string | undefined): void {
  if (adminToken === undefined)
    throw new GatewayError(403, 'invalid_request_error', 'admin_disabled', 'this tracker has no admin token (NEURON_ADMIN_TOKEN); admin routes are off.')
  const given = bearer(req) ?? ''
  const a = Buffer.from(given)
  const b = Buffer.from(adminToken)
  // Constant-time, so response timing does not leak how much of a guessed token was right.
  if (a.length !== b.length || !timingSafeEqual(a, b))
    throw new GatewayError(401, 'invalid_request_error', 'invalid_admin_token', 'wrong or missing admin token.')
}
