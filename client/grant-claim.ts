import { solveGrantWork } from '../identity/grant-work'
import type { NodeIdentity } from '../identity/keys'
import {
  ClientToTracker,
  callRpc,
  type GrantClaimed,
  NeuronError,
  type RpcRequest,
  type RpcResponse,
  type RpcSocket,
} from '../protocol'

/**
 * Claims the tracker's new-key grant for `identity`: asks a challenge, finds its proof of work (2^bits sha256 tries on
 * average, yielding to the event loop), and sends it. Throws the tracker's typed refusal (a prefix out of grants, …).
 */
export async function claimGrant(
  tracker: RpcSocket,
  identity: NodeIdentity,
  log: (line: string) => void = () => {},
  signal?: AbortSignal,
): Promise<GrantClaimed> {
  const { challenge, bits } = await callRpc(tracker, ClientToTracker, 'grant.challenge', {})
  const started = performance.now()
  const { nonce, tries } = await solveGrantWork(challenge, identity.publicKey, bits, signal)
  log(`grant proof of ${bits} bits found in ${tries} tries, ${(performance.now() - started).toFixed(0)} ms`)
  return callRpc(tracker, ClientToTracker, 'grant.claim', { challenge, nonce })
}

/**
 * route.plan for a key that may have no account yet: told `grant_unclaimed`, it claims the tracker's grant once and
 * asks again, so a first chat on a granting tracker just works.
 */
export async function planRoute(
  tracker: RpcSocket,
  identity: NodeIdentity,
  plan: RpcRequest<typeof ClientToTracker, 'route.plan'>,
  log: (line: string) => void = () => {},
  signal?: AbortSignal,
): Promise<RpcResponse<typeof ClientToTracker, 'route.plan'>> {
  try {
    return await callRpc(tracker, ClientToTracker, 'route.plan', plan)
  } catch (error) {
    if (!(error instanceof NeuronError) || error.code !== 'grant_unclaimed') throw error
    const { grantMicro } = await claimGrant(tracker, identity, log, signal)
    log(`this key's account opened with the tracker's grant of ${grantMicro} micro-credits`)
    return callRpc(tracker, ClientToTracker, 'route.plan', plan)
  }
}
