import { z } from 'zod'
import { NeuronError } from './errors'
import { ForwardingOpen } from './forwarding'
import { MAX_BLOCKS, MAX_SESSION_TOKENS } from './limits'
import { ModelId } from './manifest'
import { describeIssues, type WireError } from './rpc'
import { Ticket } from './tickets'

/**
 * The data plane: binary frames between a client and the hops of its route, over WebSocket (or
 * relayed through the tracker). A 48-byte little-endian header, then the payload.
 *
 *  0 magic "NRN1" · 4 kind u8 · 5 dtype u8 · 6 flags u16 · 8 session id (16 bytes) · 24 step u32
 * 28 position u32 · 32 tokens u32 · 36 width u32 · 40 payload bytes u32 · 44 trailer bytes u32 · 48 payload
 * · then the trailer: JSON a host appends to its answer (its signed receipt), absent when 0 bytes.
 */
export const FRAME_HEADER_BYTES = 48
/** The longest grammar a session may carry (characters of GBNF). */
export const MAX_GRAMMAR_BYTES = 16 * 1024
/** The most top log-probabilities a sampled token carries (OpenAI's bound). */
export const MAX_TOP_LOGPROBS = 20
/**
 * A ping frame's payload, at most (bytes): a host answers a ping with a pong of the same session, step and payload at
 * once, on any path (direct, through the tracker's relay, a volunteer's circuit), so a client measures the round trip
 * of the path its frames take, relays included. Sent with the all-zero session, which no relay counts or bills.
 */
export const MAX_PING_BYTES = 64
/** The session id of frames that belong to no session (pings, errors about no session). */
export const NO_SESSION = '0'.repeat(32)
/** The largest frame a host accepts by default, and the most the tracker's relay carries. */
export const MAX_FRAME_BYTES = 32 * 1024 * 1024
const MAGIC = 0x314e524e // "NRN1"

export const FrameKind = {
  open: 1,
  forward: 2,
  hidden: 3,
  token: 4,
  close: 5,
  error: 6,
  ok: 7,
  fetch: 8,
  sign: 9,
  ping: 10,
  pong: 11,
} as const
export type FrameKind = keyof typeof FrameKind
export const Dtype = { json: 0, f32: 1, f16: 2, i32: 3 } as const
export type Dtype = keyof typeof Dtype
const BYTES_PER: Record<Dtype, number> = { json: 1, f32: 4, f16: 2, i32: 4 }

/** Flag on a forward: refill the KV cache only (failover replay); the last hop does not sample. */
export const FLAG_NO_SAMPLE = 1
/**
 * Flag on a forward or hidden frame: after the tokens × width values, the payload carries int32 side values,
 * the same count per token, token-major: what the manifest's seam says crosses besides the hidden state (the
 * token id when `tokenIds`, then `int32PerToken` indices). Their count per token is (payload bytes − value
 * bytes) / (4 × tokens); the receiver checks it against the seam.
 */
export const FLAG_SIDE = 2
/**
 * Flag on a forward: a speculative check. The step carries the last token and up to MAX_DRAFT_TOKENS drafted ones;
 * the last hop answers the greedy token after every position (`verified`), and the next step may start at any of
 * them, which rolls every hop's cache back to it.
 */
export const FLAG_VERIFY = 4
/** Drafted tokens one verify step may check (it runs one position more). */
export const MAX_DRAFT_TOKENS = 16

export interface Frame {
  readonly kind: FrameKind
  readonly dtype: Dtype
  readonly flags: number
  /** 32 hex digits. */
  readonly session: string
  readonly step: number
  readonly position: number
  readonly tokens: number
  readonly width: number
  readonly payload: Uint8Array
  /** JSON after the payload: the hop's signed receipt on hidden and token answers. */
  readonly trailer?: Uint8Array
}

export const SamplingParams = z.object({
  temperature: z.number().min(0).max(10).default(0),
  topK: z.number().int().nonnegative().optional(),
  topP: z.number().gt(0).max(1).optional(),
  minP: z.number().min(0).max(1).optional(),
  repeatPenalty: z.number().positive().optional(),
  seed: z.number().int().nonnegative().default(0),
  /** OpenAI's presence and frequency penalties over the tokens this session generated. */
  presencePenalty: z.number().min(-2).max(2).optional(),
  frequencyPenalty: z.number().min(-2).max(2).optional(),
  /** Most likely tokens to return with each sampled one (OpenAI's top_logprobs). */
  topLogprobs: z.number().int().min(0).max(MAX_TOP_LOGPROBS).optional(),
  /**
   * A GBNF grammar (llama.cpp's format) the generated text must follow; the last hop refuses a malformed one at open.
   */
  grammar: z.string().min(1).max(MAX_GRAMMAR_BYTES).optional(),
  /** With a grammar: the model's end-of-generation tokens, allowed only where the grammar accepts the text so far. */
  endTokens: z.array(z.number().int().nonnegative()).max(64).optional(),
  /**
   * Tokens the session generated before this hop opened (a replacement
   * after failover): its grammar and penalties take them first.
   */
  generated: z.array(z.number().int().nonnegative()).max(MAX_SESSION_TOKENS).optional(),
})
export type SamplingParams = z.input<typeof SamplingParams>

export const OpenSession = z.object({
  modelId: ModelId,
  blocks: z.tuple([z.number().int().nonnegative().max(MAX_BLOCKS), z.number().int().positive().max(MAX_BLOCKS)]),
  maxTokens: z.number().int().positive().max(MAX_SESSION_TOKENS),
  /** How this hop sends hidden states on (f16 halves the bytes; f32 is exact). */
  hiddenDtype: z.enum(['f16', 'f32']).default('f16'),
  /** Last hop only. */
  sampling: SamplingParams.optional(),
  /** The tracker's ticket for this hop: a host opens no session without one. */
  ticket: Ticket.optional(),
  /** Hop-to-hop forwarding (protocol/forwarding.ts); absent: client-relayed. */
  forwarding: ForwardingOpen.optional(),
  /** The ticket's client key's signature of `openMessage(ticket.signature, { blocks, maxTokens })`. */
  signature: z
    .string()
    .regex(/^[A-Za-z0-9_-]{86}$/, 'an ed25519 signature is 64 bytes, base64url')
    .optional(),
})
export type OpenSession = z.infer<typeof OpenSession>

export const SampledToken = z.object({
  token: z.number().int().nonnegative(),
  logprob: z.number(),
  computeMs: z.number().nonnegative(),
  /** The most likely tokens and their log-probabilities, most likely first, when the session asked (topLogprobs). */
  top: z
    .array(z.object({ token: z.number().int().nonnegative(), logprob: z.number() }))
    .max(MAX_TOP_LOGPROBS)
    .optional(),
  /** A verify step's answer (FLAG_VERIFY): the greedy token after each of its positions, in order. */
  verified: z
    .array(z.object({ token: z.number().int().nonnegative(), logprob: z.number() }))
    .max(MAX_DRAFT_TOKENS + 1)
    .optional(),
})
export type SampledToken = z.infer<typeof SampledToken>

const KIND_BY_CODE = new Map<number, FrameKind>(Object.entries(FrameKind).map(([k, v]) => [v, k as FrameKind]))
const DTYPE_BY_CODE = new Map<number, Dtype>(Object.entries(Dtype).map(([k, v]) => [v, k as Dtype]))

export function encodeFrame(frame: Frame): Uint8Array {
  if (!/^[0-9a-f]{32}$/.test(frame.session))
    throw new NeuronError('bad_frame', `session id must be 32 hex digits, not "${frame.session}"`)
  const trailer = frame.trailer ?? new Uint8Array(0)
  const out = new Uint8Array(FRAME_HEADER_BYTES + frame.payload.byteLength + trailer.byteLength)
  const view = new DataView(out.buffer)
  view.setUint32(0, MAGIC, true)
  view.setUint8(4, FrameKind[frame.kind])
  view.setUint8(5, Dtype[frame.dtype])
  view.setUint16(6, frame.flags, true)
  for (let i = 0; i < 16; i++) out[8 + i] = Number.parseInt(frame.session.slice(2 * i, 2 * i + 2), 16)
  view.setUint32(24, frame.step, true)
  view.setUint32(28, frame.position, true)
  view.setUint32(32, frame.tokens, true)
  view.setUint32(36, frame.width, true)
  view.setUint32(40, frame.payload.byteLength, true)
  view.setUint32(44, trailer.byteLength, true)
  out.set(frame.payload, FRAME_HEADER_BYTES)
  out.set(trailer, FRAME_HEADER_BYTES + frame.payload.byteLength)
  return out
}

/** Parses and checks a frame: a malformed one is a `bad_frame` error naming what is wrong. */
export function decodeFrame(bytes: Uint8Array): Frame {
  if (bytes.byteLength < FRAME_HEADER_BYTES)
    throw new NeuronError('bad_frame', `a frame is at least ${FRAME_HEADER_BYTES} bytes; got ${bytes.byteLength}`)
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  if (view.getUint32(0, true) !== MAGIC) throw new NeuronError('bad_frame', 'not a Neuron frame (bad magic)')
  const kind = KIND_BY_CODE.get(view.getUint8(4))
  const dtype = DTYPE_BY_CODE.get(view.getUint8(5))
  if (kind === undefined) throw new NeuronError('bad_frame', `unknown frame kind ${view.getUint8(4)}`)
  if (dtype === undefined) throw new NeuronError('bad_frame', `unknown dtype ${view.getUint8(5)}`)
  const payloadBytes = view.getUint32(40, true)
  const trailerBytes = view.getUint32(44, true)
  if (bytes.byteLength !== FRAME_HEADER_BYTES + payloadBytes + trailerBytes) {
    const trailer = trailerBytes === 0 ? '' : ` and ${trailerBytes} trailer bytes`
    throw new NeuronError(
      'bad_frame',
      `header says ${payloadBytes} payload bytes${trailer}, frame carries ${bytes.byteLength - FRAME_HEADER_BYTES}`,
    )
  }
  const tokens = view.getUint32(32, true)
  const width = view.getUint32(36, true)
  const flags = view.getUint16(6, true)
  const valueBytes = tokens * width * BYTES_PER[dtype]
  const sideBytes = payloadBytes - valueBytes
  if (dtype !== 'json' && (flags & FLAG_SIDE) === 0 && valueBytes !== payloadBytes) {
    throw new NeuronError(
      'bad_frame',
      `shape ${tokens}×${width} of ${dtype} needs ${valueBytes} bytes, payload has ${payloadBytes}`,
      {
        tokens,
        width,
        payloadBytes,
      },
    )
  }
  if (flags & FLAG_SIDE && (dtype === 'json' || tokens === 0 || sideBytes <= 0 || sideBytes % (4 * tokens) !== 0)) {
    throw new NeuronError(
      'bad_frame',
      `a frame with side values carries ${tokens}×${width} ${dtype} values (${valueBytes} bytes) and then a whole ` +
        `number (≥ 1) of int32 per token; its payload has ${payloadBytes} bytes`,
      { tokens, width, payloadBytes },
    )
  }
  let session = ''
  for (let i = 0; i < 16; i++) session += (bytes[8 + i] ?? 0).toString(16).padStart(2, '0')
  return {
    kind,
    dtype,
    flags,
    session,
    step: view.getUint32(24, true),
    position: view.getUint32(28, true),
    tokens,
    width,
    payload: bytes.subarray(FRAME_HEADER_BYTES, FRAME_HEADER_BYTES + payloadBytes),
    ...(trailerBytes === 0 ? {} : { trailer: bytes.subarray(FRAME_HEADER_BYTES + payloadBytes) }),
  }
}

/** The frame's trailer parsed with `schema`; undefined when it has none or it does not parse. */
export function readTrailer<T extends z.ZodType>(frame: Frame, schema: T): z.output<T> | undefined {
  if (frame.trailer === undefined) return undefined
  try {
    const parsed = schema.safeParse(JSON.parse(text().decoder.decode(frame.trailer)))
    return parsed.success ? parsed.data : undefined
  } catch {
    return undefined
  }
}

/** The same frame with `body` as its JSON trailer. */
export function withTrailer(frame: Uint8Array, body: unknown): Uint8Array {
  const f = decodeFrame(frame)
  return encodeFrame({ ...f, trailer: text().encoder.encode(JSON.stringify(body)) })
}

// Made on first use: the preload bundle runs where a module's top level may not have TextEncoder (electron/preload).
let codec: { encoder: TextEncoder; decoder: TextDecoder } | undefined
const text = () => (codec ??= { encoder: new TextEncoder(), decoder: new TextDecoder() })

/** A frame whose payload is a JSON message. */
export function jsonFrame(kind: FrameKind, session: string, step: number, body: unknown): Uint8Array {
  return encodeFrame({
    kind,
    dtype: 'json',
    flags: 0,
    session,
    step,
    position: 0,
    tokens: 0,
    width: 0,
    payload: text().encoder.encode(JSON.stringify(body)),
  })
}

export function readJson<T extends z.ZodType>(frame: Frame, schema: T): z.output<T> {
  if (frame.dtype !== 'json')
    throw new NeuronError('bad_frame', `a ${frame.kind} frame carries JSON, not ${frame.dtype}`)
  let raw: unknown
  try {
    raw = JSON.parse(text().decoder.decode(frame.payload))
  } catch {
    throw new NeuronError('bad_frame', `the ${frame.kind} frame's payload is not JSON`)
  }
  const parsed = schema.safeParse(raw)
  if (!parsed.success) throw new NeuronError('bad_frame', describeIssues(`${frame.kind} frame`, parsed.error))
  return parsed.data
}

export function errorFrame(session: string, step: number, error: WireError): Uint8Array {
  return jsonFrame('error', session, step, error)
}

/** int32 side values per token a frame carries after its values (FLAG_SIDE); 0 without. */
export function sidePerToken(frame: Pick<Frame, 'flags' | 'dtype' | 'tokens' | 'width' | 'payload'>): number {
  if ((frame.flags & FLAG_SIDE) === 0 || frame.dtype === 'json' || frame.tokens === 0) return 0
  return (frame.payload.byteLength - frame.tokens * frame.width * BYTES_PER[frame.dtype]) / (4 * frame.tokens)
}

/** A payload of `tokens` rows as its values and its side values (`side` int32 per row after all the values). */
export function splitPayload(
  payload: Uint8Array,
  tokens: number,
  side: number,
): { values: Uint8Array; side: Uint8Array } {
  const at = Math.max(0, payload.byteLength - tokens * side * 4)
  return { values: payload.subarray(0, at), side: payload.subarray(at) }
}

/** A frame's side values (FLAG_SIDE), tokens × sidePerToken int32, token-major (a copy); empty without. */
export function sideOf(frame: Frame): Int32Array {
  return new Int32Array(new Uint8Array(splitPayload(frame.payload, frame.tokens, sidePerToken(frame)).side).buffer)
}

/** Typed views over a frame's numeric values (without its side values; copied when unaligned). */
export function payloadAs(frame: Frame): Int32Array | Float32Array | Uint16Array {
  const p = splitPayload(frame.payload, frame.tokens, sidePerToken(frame)).values
  // A copy when unaligned (Buffer.slice would only make a view).
  const aligned = p.byteOffset % 4 === 0 ? p : new Uint8Array(p)
  switch (frame.dtype) {
    case 'i32':
      return new Int32Array(aligned.buffer, aligned.byteOffset, aligned.byteLength / 4)
    case 'f32':
      return new Float32Array(aligned.buffer, aligned.byteOffset, aligned.byteLength / 4)
    case 'f16':
      return new Uint16Array(aligned.buffer, aligned.byteOffset, aligned.byteLength / 2)
    default:
      throw new NeuronError('bad_frame', `a ${frame.kind} frame with ${frame.dtype} payload has no numbers`)
  }
}
