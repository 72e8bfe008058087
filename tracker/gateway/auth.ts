import { timingSafeEqual } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { DASHBOARD_SCOPE, NODE_AUTH_HEADER } from '../../protocol'
import type { StoredAccount } from '../ledger/ledger-store'
import type { GatewayDeps } from './deps'
import { GatewayError } from './errors'
import { bearer } from './http'

/**
 * The account whose API key the request carries (`Authorization: Bearer nk-…`); 401 without a known
 * one. On a private swarm the account's public key must be on the list (403 otherwise): an API key
 * is only as good as the key its account was created for.
 */
export function authenticate(
  req: IncomingMessage,
  deps: Pick<GatewayDeps, 'accounts' | 'admits'>,
): Promise<StoredAccount> {
  return authenticateKey(bearer(req), deps)
}

/** As `authenticate`, for a key an API sends its own way; `howToSend` tells a caller without one where it goes. */
export async function authenticateKey(
  key: string | undefined,
  deps: Pick<GatewayDeps, 'accounts' | 'admits'>,
  howToSend = 'send Authorization: Bearer nk-…',
): Promise<StoredAccount> {
  const { accounts } = deps
  if (key === undefined) {
    throw new GatewayError(
      401,
      'invalid_request_error',
      'missing_api_key',
      `no API key: ${howToSend} (ask the tracker operator for an account).`,
    )
  }
  const account = await accounts.byApiKey(key)
  if (account === undefined)
    throw new GatewayError(
      401,
      'invalid_request_error',
      'invalid_api_key',
      `API key ${key.slice(0, 6)}… is not known to this tracker.`,
    )
  if (!deps.admits(account.publicKey)) {
    throw notAdmitted(
      account.publicKey === null
        ? `account ${account.accountId} has no public key, so it cannot be on the list; ask the operator for an ` +
            `account made for your listed key (public_key).`
        : `account ${account.accountId}'s key ${account.publicKey.slice(0, 8)}… is not on its list; ask the ` +
            `operator to add it.`,
    )
  }
  return account
}

/**
 * Lets a dashboard request through on an open swarm; on a private one only a member's: a key proven
 * by a signed `x-neuron-auth` header (hosts and the app), or an API key (authenticate), admitted.
 */
export async function requireMember(
  req: IncomingMessage,
  deps: Pick<GatewayDeps, 'accounts' | 'admits' | 'provenKey'>,
): Promise<void> {
  if (deps.admits(null)) return
  let proven: string | undefined
  try {
    proven = await deps.provenKey(req, DASHBOARD_SCOPE)
  } catch (error) {
    throw new GatewayError(
      401,
      'invalid_request_error',
      'invalid_signature',
      error instanceof Error ? error.message : String(error),
    )
  }
  if (proven === undefined && bearer(req) === undefined) {
    throw new GatewayError(
      401,
      'invalid_request_error',
      'missing_credentials',
      `this is a private swarm: its dashboards answer members only; send an API key (Authorization: Bearer nk-…) ` +
        `or your key signed in ${NODE_AUTH_HEADER} (a nonce from GET /auth/challenge, signed for ${DASHBOARD_SCOPE}).`,
    )
  }
  if (proven === undefined) await authenticate(req, deps)
  else if (!deps.admits(proven))
    throw notAdmitted(`key ${proven.slice(0, 8)}… is not on its list; ask the operator to add it.`)
}

function notAdmitted(why: string): GatewayError {
  return new GatewayError(403, 'permission_error', 'not_admitted', `this is a private swarm and ${why}`)
}

/**
 * Passes only a request bearing the operator's admin token; without a configured token the admin routes are off (403).
 */
export function requireAdmin(req: IncomingMessage, adminToken: string | undefined): void {
  if (adminToken === undefined)
    throw new GatewayError(
      403,
      'invalid_request_error',
      'admin_disabled',
      'this tracker has no admin token (NEURON_ADMIN_TOKEN); admin routes are off.',
    )
  const given = bearer(req) ?? ''
  const a = Buffer.from(given)
  const b = Buffer.from(adminToken)
  // Constant-time, so response timing does not leak how much of a guessed token was right.
  if (a.length !== b.length || !timingSafeEqual(a, b))
    throw new GatewayError(401, 'invalid_request_error', 'invalid_admin_token', 'wrong or missing admin token.')
}
