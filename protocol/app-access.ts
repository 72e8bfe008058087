import { z } from 'zod'
import { ApiAccessView, ApiRequestLog, CreatedApiKey } from './api-access'
import { Settings } from './app-settings'
import { PublicKey } from './identity'
import { LanView, PairingId } from './lan'
import { rpc } from './rpc'

// Who this app is and who may use its swarm: its key pair, the apps paired on the home network, and the keys of the
// OpenAI-compatible API. Part of the app's contract (protocol/app.ts).

const Empty = z.object({}).strict()

/** identity.*, lan.* and api.*: the Settings screen's identity and pairing, and the API tab. */
export const AccessMethods = {
  /** The identity's private key (PKCS#8 PEM) for a backup. */
  'identity.export': rpc(Empty, z.object({ pem: z.string(), publicKey: PublicKey })),
  /** Replaces the identity (hosting must be stopped). */
  'identity.import': rpc(z.object({ pem: z.string().min(1, 'paste a PEM private key') }).strict(), Settings),
  /** The Neuron apps found on the home network, pairings under way and done. */
  'lan.get': rpc(Empty, LanView),
  /** Asks a found app to let this one join its swarm; both screens then show a code. */
  'lan.pair': rpc(z.object({ key: PublicKey }).strict(), LanView),
  /** The user saw the same code on both screens. */
  'lan.confirm': rpc(z.object({ pairingId: PairingId }).strict(), LanView),
  /** The user refused (the codes differ, or it was not asked for). */
  'lan.refuse': rpc(z.object({ pairingId: PairingId }).strict(), LanView),
  /** The swarm's OpenAI-compatible endpoint, and the app's key there (masked). */
  'api.get': rpc(Empty, ApiAccessView),
  /**
   * Makes a key for the app's own account on the embedded tracker,
   * revoking the one before; not_available on a remote tracker.
   */
  'api.createKey': rpc(Empty, CreatedApiKey),
  /** Revokes the app's keys: requests with one get 401 invalid_api_key at once. */
  'api.revokeKey': rpc(Empty, ApiAccessView),
  /** The app account's latest requests through the API (tokens, credits, status), newest first. */
  'api.requests': rpc(Empty, ApiRequestLog),
} as const
