// A step's audits re-run a hop's history on another host (a round trip to the tracker, and a third host when two
// disagree): its token waits for them, and so does the next step. Running on ahead of them (up to
// MAX_AUDITS_IN_FLIGHT - 1 steps, taken back when an audit found a liar) was never on, and is gone; audits by prefill,
// off the critical path, come in a later issue (docs/architecture.md, audits).
import { HopFailure } from '../../dataplane/hop-link'
import type { SampledToken } from '../../protocol'
import type { AuditableHop } from '../step-audits'

/**
 * Holds a step's token until the step's audits pass. `audit` starts them on the route as it stands (undefined: no hop
 * was picked). When one finds a liar, `runAgain` replaces it (and rebuilds the hops after it, which took its answers)
 * and runs the step again, whose audits are held in turn. Returns the token to confirm, or undefined when the caller
 * went away meanwhile.
 */
export async function auditedToken(
  sampled: SampledToken,
  audit: () => Promise<AuditableHop | undefined> | undefined,
  runAgain: (liar: HopFailure) => Promise<SampledToken>,
  signal: AbortSignal | undefined,
): Promise<SampledToken | undefined> {
  let audits = audit()
  while (audits !== undefined) {
    const liar = await unlessAborted(audits, signal)
    if (signal?.aborted) return undefined
    if (liar === undefined) return sampled
    sampled = await runAgain(new HopFailure(liar.hop.hostId, 'lied', `host ${liar.hop.hostId} failed an audit`))
    audits = audit()
    // a caller gone while the step ran again is not given its token
    if (signal?.aborted) return undefined
  }
  return sampled
}

/** What `p` resolves to, or undefined as soon as `signal` aborts: a caller that has gone waits for nothing. */
function unlessAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T | undefined> {
  if (signal === undefined) return p
  if (signal.aborted) return Promise.resolve(undefined)
  return new Promise((resolve, reject) => {
    const onAbort = () => resolve(undefined)
    signal.addEventListener('abort', onAbort, { once: true })
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort))
  })
}
