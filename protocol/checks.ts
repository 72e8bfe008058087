import { z } from 'zod'
import { BlockRange } from './blocks'
import { SamplingParams } from './frames'
import { NodeId } from './identity'
import { MAX_MESSAGE_CHARS, MAX_SEAM_VALUES, MAX_SESSION_TOKENS } from './limits'
import { Receipt } from './receipts'

/** Steps one audit may carry: the audited hop's whole history in the session, prefill included. */
export const MAX_AUDIT_STEPS = 4096
/** Bytes of inputs and output one audit may carry (hidden states of every step so far). */
export const MAX_AUDIT_BYTES = 32 * 1024 * 1024
/** Audits one client key may have in flight at the tracker: evidence costs other hosts a re-run. */
export const MAX_AUDITS_IN_FLIGHT = 4

const Count = z.number().int().nonnegative()
const Bytes = z.custom<Uint8Array>((v) => v instanceof Uint8Array, 'expected binary data')

/** What the tracker's checks say of one host: known-answer probes, audits of real steps, probation, a ban. */
export const HostChecksView = z.object({
  probesPassed: Count,
  probesFailed: Count,
  auditsPassed: Count,
  auditsFailed: Count,
  /** A new key is routed last and audited more until it has passed `probationLeft` more probes. */
  probation: z.boolean(),
  probationLeft: Count,
  ban: z.object({ reason: z.string().max(MAX_MESSAGE_CHARS), at: z.number() }).nullable(),
  /** Compute per block the tracker measured on its probes (what routing uses), ms. */
  measuredMsPerBlock: z.number().nonnegative().nullable(),
  /** What the host says of itself, ms per block. */
  advertisedMsPerBlock: z.number().nonnegative().nullable(),
  /** The host claims to be far faster than measured. */
  speedMarked: z.boolean(),
  lastProbeAt: z.number().nullable(),
})
export type HostChecksView = z.infer<typeof HostChecksView>

/**
 * One step a hop ran: what it was sent (its bytes are the next
 * `bytes` of the request's `payloads`) and its signed receipt.
 */
export const AuditedStep = z.object({
  receipt: Receipt,
  dtype: z.enum(['f32', 'f16', 'i32']),
  tokens: z.number().int().positive().max(MAX_SESSION_TOKENS),
  width: z
    .number()
    .int()
    .positive()
    .max(1 << 20),
  bytes: z.number().int().positive().max(MAX_AUDIT_BYTES),
  /** int32 side values per token after the values (the seam's token ids and indices; frames.ts FLAG_SIDE). */
  side: z.number().int().nonnegative().max(MAX_SEAM_VALUES).default(0),
  /** A verify step: the rows the route kept of it (the accepted positions), the first `kept` of `tokens`. */
  kept: z.number().int().positive().max(MAX_SESSION_TOKENS).optional(),
})
export type AuditedStep = z.infer<typeof AuditedStep>

/**
 * A client's request to check one hop's steps: the hop's steps in the session so far, in order, their inputs back to
 * back in `payloads` (one binary attachment: Socket.IO refuses messages with more than 10), the answer it got for the
 * last (it hashes to that receipt's `output`) and every step's sketch. The tracker re-runs them on another host of the
 * same blocks as one prefill and the last step, and compares every step's rows.
 */
export const AuditRequest = z
  .object({
    session: z.string().regex(/^[0-9a-f]{32}$/),
    hostId: NodeId,
    blocks: BlockRange,
    steps: z.array(AuditedStep).min(1).max(MAX_AUDIT_STEPS),
    payloads: Bytes.refine((b) => b.byteLength <= MAX_AUDIT_BYTES, `at most ${MAX_AUDIT_BYTES} bytes`),
    output: Bytes.refine((b) => b.byteLength <= MAX_AUDIT_BYTES, `at most ${MAX_AUDIT_BYTES} bytes`),
    /**
     * Every step's sketch of its answer's rows (commitment.ts), back to back, each what its receipt's `commit` signs:
     * the re-run's rows are compared with all of them, not only the last answer's. Absent when the client did not see
     * every answer (forwarded on).
     */
    sketches: Bytes.refine((b) => b.byteLength <= MAX_AUDIT_BYTES, `at most ${MAX_AUDIT_BYTES} bytes`).optional(),
    /**
     * The last hop's sampling as the client opened it, its sha256 what every receipt's `commit` signs
     * (commitment.ts samplingCommitment): the re-run draws the last token with it and compares.
     */
    sampling: SamplingParams.optional(),
  })
  .refine(
    (r) => r.steps.reduce((s, step) => s + step.bytes, 0) === r.payloads.byteLength,
    'the steps’ bytes must add up to the payloads’ length',
  )
export type AuditRequest = z.infer<typeof AuditRequest>

export const AuditVerdict = z.object({
  /** passed: another host agrees; failed: `liar` lied (it is banned); unresolved: nobody could be checked against. */
  verdict: z.enum(['passed', 'failed', 'unresolved']),
  liar: NodeId.nullable(),
  reason: z.string().max(MAX_MESSAGE_CHARS),
})
export type AuditVerdict = z.infer<typeof AuditVerdict>
