import { z } from 'zod'
import { MAX_BLOCKS } from './limits'

// Hidden states read from, added to and run through a route's blocks: the SDK's (client/index.ts) and the
// gateway's POST /v1/hidden_states. A hidden state is the residual stream, rows (tokens) × width, f32, row-major.

/** The most rows (token positions) one hidden-state request runs. */
export const MAX_HIDDEN_TOKENS = 2048
/** The widest hidden state a request may carry (a row of `nEmbd` values; 16384 is past every model we serve). */
export const MAX_HIDDEN_WIDTH = 16_384
/** The most values one hidden state may hold, rows × width: 16 MiB of f32, half a frame (MAX_FRAME_BYTES). */
export const MAX_HIDDEN_VALUES = 1 << 22
/** The largest |value| a caller may send in a state or a steering vector (f16 seams overflow at 65504). */
export const MAX_HIDDEN_ABS = 1e4

/** f32 little-endian values, row-major, base64 (RFC 4648, with or without padding). */
const Base64F32 = z
  .string()
  .max(Math.ceil((MAX_HIDDEN_VALUES * 4) / 3) + 4)
  .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'base64 (A–Z, a–z, 0–9, +, /) of little-endian f32 values')
const Value = z.number().min(-MAX_HIDDEN_ABS).max(MAX_HIDDEN_ABS)

/** A steering vector: `width` numbers, or their f32 bytes in base64. */
export const HiddenVector = z.union([Base64F32, z.array(Value).min(1).max(MAX_HIDDEN_WIDTH)])
/** A hidden state: rows of numbers, or all its f32 bytes (row-major) in base64. */
export const HiddenRows = z.union([
  Base64F32,
  z.array(z.array(Value).min(1).max(MAX_HIDDEN_WIDTH)).min(1).max(MAX_HIDDEN_TOKENS),
])

const Block = z.number().int().nonnegative().max(MAX_BLOCKS)

/**
 * POST /v1/hidden_states. The run starts at block 0 from `prompt` (text) or `tokens` (ids), or at `input.from_block`
 * from a hidden state (a span run), and answers the state after `after_block`; `add` adds a vector to every row of
 * the state after `add.block` before the next block runs (steering).
 */
export const HiddenStatesRequest = z
  .object({
    model: z.string().min(1).max(200),
    prompt: z
      .string()
      .min(1)
      .max(64 * MAX_HIDDEN_TOKENS)
      .optional(),
    tokens: z.array(z.number().int().nonnegative()).min(1).max(MAX_HIDDEN_TOKENS).optional(),
    input: z
      .object({
        /** The first block the span runs: the state given is the one after block from_block − 1. */
        from_block: Block.min(1),
        /** Rows of `data` (needed for base64; checked against the rows given as arrays). */
        tokens: z.number().int().positive().max(MAX_HIDDEN_TOKENS),
        data: HiddenRows,
      })
      .optional(),
    after_block: Block,
    add: z.object({ block: Block, vector: HiddenVector }).optional(),
    /** How the answer's state is written: base64 of f32 (compact) or rows of numbers. */
    encoding: z.enum(['f32-base64', 'json']).default('f32-base64'),
  })
  .refine((r) => [r.prompt, r.tokens, r.input].filter((x) => x !== undefined).length === 1, {
    message: 'give exactly one of prompt (text), tokens (ids) or input (a hidden state with from_block)',
    path: ['prompt'],
  })
export type HiddenStatesRequest = z.output<typeof HiddenStatesRequest>

/** The answer: the state after `after_block`, and what computing it cost. */
export const HiddenStatesResponse = z.object({
  object: z.literal('hidden_states'),
  model: z.string(),
  from_block: Block,
  after_block: Block,
  tokens: z.number().int().positive(),
  width: z.number().int().positive(),
  encoding: z.enum(['f32-base64', 'json']),
  data: HiddenRows,
  /** The hosts that ran it, with the blocks each ran, in order. */
  route: z.array(z.object({ host_id: z.string().max(64), blocks: z.tuple([Block, Block]) })).max(MAX_BLOCKS),
  /** The prompt's token ids when it started at block 0. */
  token_ids: z.array(z.number().int()).optional(),
  usage: z.object({
    /** Token positions run through the blocks. */
    positions: z.number().int().nonnegative(),
    /** Blocks each position ran through. */
    blocks: z.number().int().nonnegative(),
    /** Micro-credits the hops' receipts charged the account. */
    charged_micro: z.number().int().nonnegative(),
  }),
})
export type HiddenStatesResponse = z.infer<typeof HiddenStatesResponse>
