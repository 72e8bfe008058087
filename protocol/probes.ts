import { z } from 'zod'
import { MAX_BLOCKS, MAX_SEAM_VALUES } from './limits'
import { ModelId } from './manifest'

/**
 * How a probe's rows are sent and computed, the same on both sides: all but the last two as one prefill,
 * then one token at a time, as a chat does. Batched and single-token matmuls round differently, and a
 * mixture-of-experts router near a tie turns that difference into another expert.
 */
export function probeChunks(n: number): [number, number][] {
  if (n <= 2) return [[0, n]]
  return [
    [0, n - 2],
    [n - 2, n - 1],
    [n - 1, n],
  ]
}

/** Probes one model's set holds: a few are enough, each catches a lying host on its own. */
export const MAX_PROBES = 64
/** Tokens one probe runs: a short prompt, long enough to time single-token steps at its end. */
export const MAX_PROBE_TOKENS = 64
/** A whole probe set, bytes of reference hidden states: it lives on the tracker, in SQLite. */
export const MAX_PROBE_SET_BYTES = 48 * 1024 * 1024

const F32Bytes = z
  .custom<Uint8Array>((v) => v instanceof Uint8Array, 'expected bytes')
  .refine((b) => b.byteLength % 4 === 0, 'f32 values are 4 bytes each')

/**
 * One known-answer probe: `tokens` run through the whole model by the publisher (f32 seams), and
 * what a host must answer for any range of blocks. `hidden[i]` is the input to block
 * `boundaries[i]` (the output of the block before it) for every token: tokens × width f32 values, then
 * tokens × side int32 values where the seam carries them (see `probeBoundary`).
 * `accept[p]` are the next tokens greedy decoding may pick after position p, given the seam tolerance
 * (the reference's argmax and any token whose logit is within the accept margin of it).
 */
export const Probe = z.object({
  tokens: z.array(z.number().int().nonnegative()).min(3).max(MAX_PROBE_TOKENS),
  boundaries: z.array(z.number().int().positive().max(MAX_BLOCKS)).max(MAX_BLOCKS),
  hidden: z.array(F32Bytes).max(MAX_BLOCKS),
  accept: z.array(z.array(z.number().int().nonnegative()).min(1).max(64)).max(MAX_PROBE_TOKENS),
})
export type Probe = z.infer<typeof Probe>

/**
 * The publisher's secret known-answer probes for a model: handed to the tracker with the manifest,
 * never to hosts (model.get does not return them). The tracker probes a host's range with them.
 */
export const ProbeSet = z
  .object({
    modelId: ModelId,
    nLayer: z.number().int().positive().max(MAX_BLOCKS),
    nEmbd: z
      .number()
      .int()
      .positive()
      .max(1 << 20),
    /**
     * Values per token entering block b (index b − 1), where they
     * are not nEmbd (DeepSeek-V4's hyper-connection streams).
     */
    widths: z.array(z.number().int().positive().max(MAX_SEAM_VALUES)).max(MAX_BLOCKS).optional(),
    /** int32 side values per token entering block b (index b − 1): the token id and indices its seam carries. */
    sides: z.array(z.number().int().nonnegative().max(MAX_SEAM_VALUES)).max(MAX_BLOCKS).optional(),
    probes: z.array(Probe).min(1).max(MAX_PROBES),
  })
  .superRefine((set, ctx) => {
    let bytes = 0
    for (const [i, p] of set.probes.entries()) {
      if (p.hidden.length !== p.boundaries.length)
        ctx.addIssue({
          code: 'custom',
          message: `probe ${i} has ${p.boundaries.length} boundaries but ${p.hidden.length} hidden states`,
        })
      if (p.accept.length !== p.tokens.length)
        ctx.addIssue({
          code: 'custom',
          message: `probe ${i} has ${p.tokens.length} tokens but ${p.accept.length} accept lists`,
        })
      for (const [j, h] of p.hidden.entries()) {
        bytes += h.byteLength
        const { width, side } = probeBoundary(set, p.boundaries[j] ?? 0)
        if (h.byteLength !== p.tokens.length * (width + side) * 4)
          ctx.addIssue({
            code: 'custom',
            message:
              `probe ${i} boundary ${p.boundaries[j]}: expected ${p.tokens.length} × ${width} f32 ` +
              `values${side > 0 ? ` and ${side} int32 per token` : ''}`,
          })
      }
      if (p.boundaries.some((b) => b >= set.nLayer))
        ctx.addIssue({ code: 'custom', message: `probe ${i} names a boundary past the model's ${set.nLayer} blocks` })
    }
    if (bytes > MAX_PROBE_SET_BYTES)
      ctx.addIssue({
        code: 'custom',
        message: `a probe set holds at most ${MAX_PROBE_SET_BYTES} bytes of hidden states, not ${bytes}`,
      })
  })
export type ProbeSet = z.infer<typeof ProbeSet>

/** What a probe holds entering block b: `width` f32 values per token, then `side` int32 per token. */
export function probeBoundary(
  set: {
    readonly nEmbd: number
    readonly widths?: readonly number[] | undefined
    readonly sides?: readonly number[] | undefined
  },
  b: number,
) {
  return { width: set.widths?.[b - 1] ?? set.nEmbd, side: set.sides?.[b - 1] ?? 0 }
}
