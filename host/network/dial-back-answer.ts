import type { IncomingMessage, ServerResponse } from 'node:http'
import type { NodeIdentity } from '../../identity/keys'
import { DIAL_BACK_PATH, type DialBackProof, dialBackMessage, MAX_NONCE_CHARS } from '../../protocol'

/** Signs a tracker's dial-back nonce (dialBackMessage): the message is for dial-backs only, so any tracker may ask. */
export type DialBackProver = (trackerKey: string, nonce: string) => DialBackProof

/**
 * Answers the tracker's dial-back on the data-plane port: GET DIAL_BACK_PATH?tracker=KEY&nonce=… gets the host's key
 * and its signature of the nonce for that tracker. Anything else on plain HTTP gets 426, as ws answers it.
 */
export function answerDialBack(req: IncomingMessage, res: ServerResponse, prove: DialBackProver | undefined): void {
  const url = new URL(req.url ?? '/', 'http://host')
  const nonce = url.searchParams.get('nonce') ?? ''
  const tracker = url.searchParams.get('tracker') ?? ''
  const [status, body] = dialBackAnswer(req.method === 'GET' && url.pathname === DIAL_BACK_PATH, tracker, nonce, prove)
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' }).end(JSON.stringify(body))
}

const BASE64URL = /^[A-Za-z0-9_-]{16,}$/

function dialBackAnswer(
  asked: boolean,
  tracker: string,
  nonce: string,
  prove: DialBackProver | undefined,
): [number, unknown] {
  const refuse = (status: number, code: string, message: string): [number, unknown] => [
    status,
    { error: { code, message } },
  ]
  if (!asked) return refuse(426, 'upgrade_required', 'this port speaks WebSocket: open a data-plane connection.')
  if (!BASE64URL.test(nonce) || nonce.length > MAX_NONCE_CHARS)
    return refuse(400, 'bad_nonce', `a dial-back nonce is 16 to ${MAX_NONCE_CHARS} base64url characters.`)
  if (!BASE64URL.test(tracker) || tracker.length > MAX_NONCE_CHARS)
    return refuse(400, 'bad_tracker_key', 'a dial-back names the tracker key it checks the signature for (?tracker=).')
  if (prove === undefined) return refuse(503, 'no_key', 'this server has no key to prove; it is not a swarm host.')
  return [200, prove(tracker, nonce)]
}

/** The prover of a host's key: its signature of each dial-back. */
export function dialBackProver(identity: NodeIdentity): DialBackProver {
  return (trackerKey, nonce) => ({
    publicKey: identity.publicKey,
    signature: identity.sign(dialBackMessage(trackerKey, nonce)),
  })
}
