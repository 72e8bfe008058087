import { z } from 'zod'
import { NodeId } from './identity'
import { MAX_BLOCKS, MAX_URL_CHARS } from './limits'
import { CertFingerprint } from './reachability'
import { Receipt } from './receipts'

/**
 * Hop-to-hop forwarding (docs/architecture.md, "the path of one token"): the client sends a step to the first hop of a
 * run of directly reachable hops; each forwards its hidden states straight to the next, and the run's last hop answers
 * the client. A per-session, per-seam capability, which the client gives only to the two hops of that seam, is the only
 * way into a session other than its client's own connection.
 */
export const Capability = z
  .string()
  .regex(/^[0-9a-f]{64}$/, 'a forwarding capability is 32 random bytes, 64 hex digits')
export type Capability = z.infer<typeof Capability>

/** What an open tells a hop about forwarding; absent: the client carries every hidden state (client-relayed). */
export const ForwardingOpen = z.object({
  /**
   * Forwarded frames into this session must carry this capability
   * (the predecessor was given it); absent: none are taken.
   */
  accept: Capability.optional(),
  /**
   * Where this hop sends its output on steps the client asks forwarded: the successor at its endpoint, pinned to its
   * certificate; or, where the successor takes no connections, over a channel this hop punches to it (`punch`: its
   * host id; the tracker carries the offer and the answer, protocol/punch.ts).
   */
  next: z
    .object({
      endpoint: z.string().max(MAX_URL_CHARS).url().optional(),
      punch: NodeId.optional(),
      fingerprint: CertFingerprint.optional(),
      capability: Capability,
    })
    .refine(
      (n) => (n.endpoint === undefined) !== (n.punch === undefined),
      'the next hop is named by its endpoint or by its host id to punch to, one of the two',
    )
    .optional(),
})
export type ForwardingOpen = z.infer<typeof ForwardingOpen>

/**
 * How many hops past this one a step goes before the run's last answers the client: each hop that forwards passes one
 * less on, and a hop given 0 answers its client itself, whatever successor its open named (the client carries that
 * seam: after a failover, or where the seam is near the client). Absent (older clients): as far as the opens reach.
 */
const Through = z.number().int().nonnegative().max(MAX_BLOCKS)

/** A client's step trailer asking the hop to forward its output (the client's signature as on every step). */
export const ForwardedStepTrailer = z.object({
  client: z.string(),
  forward: z.literal(true),
  through: Through.optional(),
})

/**
 * A forwarded frame's trailer (hop to hop): the seam's capability; `origin`, the first hop's receipt of this step,
 * which carries the client's signature of the step (session, step, positions: the client asked for it); `prev`, the
 * predecessor's receipt, whose output digest must be the frame's payload's (where the input came from).
 */
export const ChainTrailer = z.object({
  capability: Capability,
  origin: Receipt,
  prev: Receipt,
  through: Through.optional(),
})
export type ChainTrailer = z.infer<typeof ChainTrailer>

/** A client asking a hop for the output it forwarded at `step` (audits, failover replay). */
export const FetchOutput = z.object({ step: z.number().int().nonnegative().max(0xffffffff) })
export type FetchOutput = z.infer<typeof FetchOutput>

/**
 * A client's signature of a forwarded step (receipts.ts's stepMessage over the input the hop's receipt names), sent
 * after the hop's digest, off the critical path: the hop then signs its receipt with it, as on every step.
 */
export const CountersignStep = z.object({
  client: z.string().regex(/^[A-Za-z0-9_-]{86}$/, 'an ed25519 signature is 64 bytes, base64url'),
})
export type CountersignStep = z.infer<typeof CountersignStep>

/**
 * A receipt for a step forwarded into a hop whose client never countersigned it, as the host hands it in when the
 * session ends: with the chain it was forwarded with (the first hop's receipt, which carries the client's signature
 * of the step, and the predecessor's), which proves the client asked for it, so the tracker pays it all the same.
 */
export const ChainedReceipt = Receipt.extend({ chain: z.object({ origin: Receipt, prev: Receipt }) })
export type ChainedReceipt = z.infer<typeof ChainedReceipt>
