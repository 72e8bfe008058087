// The publisher's secret known-answer probes: random token prompts run through the whole model one
// block at a time (f32 seams, one block's weights in memory at once), recording the hidden state at
// every block boundary and, at the head, which next tokens greedy decoding may pick.
import { randomInt } from 'node:crypto'
import { join } from 'node:path'
import { readGguf } from '../gguf/reader'
import { artifactsFor } from '../native/artifacts'
import { ShardRuntime } from '../native/shard-runtime'
import {
  ACCEPT_LOGIT_MARGIN,
  concatenated,
  joinSide,
  type Manifest,
  NeuronError,
  type Probe,
  ProbeSet,
  probeChunks,
  type Seam,
  seamAt,
  seamSideValues,
  splitSide,
} from '../protocol'

/** Probes a set holds by default: each one alone catches a lying host. */
export const PROBE_COUNT = 8
/** Tokens per probe by default: a prefill of all but two, then two single-token steps. */
export const PROBE_TOKENS = 12
/**
 * Bytes of hidden states a set holds by default: it travels in one model.publish message next to the
 * torrent and tokenizer. A wide, deep model gets fewer probes (at least one).
 */
export const PROBE_SET_BYTES = 24 * 1024 * 1024
/** Tokens one position's accept list holds at most (the schema's bound). */
const MAX_ACCEPT = 64

export interface ProbeSetOptions {
  /** CPU threads for the runtime; never more than the machine's cores. */
  threads: number
  count?: number
  tokens?: number
  /**
   * A uniform number in [0, 1), for reproducible sets in tests; default: crypto randomness (the prompts are secret).
   */
  random?: () => number
  /** The runtime's device (default 'cpu': the reference should not depend on the publisher's GPU). */
  device?: string
  /** Bytes of hidden states the set may hold (default PROBE_SET_BYTES): caps the count. */
  maxBytes?: number
}

/**
 * The probe set of a packed model whose artifacts lie in `dir`: `count` prompts (fewer when their
 * hidden states would pass `maxBytes`) of `tokens` random non-special token ids run through the
 * model (see referenceRun).
 */
export async function computeProbeSet(manifest: Manifest, dir: string, options: ProbeSetOptions): Promise<ProbeSet> {
  const tokens = options.tokens ?? PROBE_TOKENS
  const boundaries = Array.from({ length: manifest.nLayer - 1 }, (_, i) => seamAt(manifest, i + 1))
  const perProbe = tokens * 4 * boundaries.reduce((sum, seam) => sum + seam.values + seamSideValues(seam), 0)
  const count = Math.max(
    1,
    Math.min(options.count ?? PROBE_COUNT, Math.floor((options.maxBytes ?? PROBE_SET_BYTES) / Math.max(1, perProbe))),
  )
  const pickable = await ordinaryTokens(manifest, dir)
  const draw =
    options.random === undefined
      ? (n: number) => randomInt(n)
      : (n: number) => Math.floor((options.random as () => number)() * n)
  const prompts = Array.from({ length: count }, () =>
    Array.from({ length: tokens }, () => pickable[draw(pickable.length)] as number),
  )
  const reference = await referenceRun(manifest, dir, prompts, options)
  const probes: Probe[] = prompts.map((p, i) => ({
    tokens: p,
    boundaries: Array.from({ length: manifest.nLayer - 1 }, (_, b) => b + 1),
    hidden: (reference.hidden[i] as Float32Array[]).map((h, j) => {
      const side = reference.side[i]?.[j]
      const values = new Uint8Array(h.buffer, h.byteOffset, h.byteLength)
      return side === undefined
        ? values
        : new Uint8Array(Buffer.concat([values, new Uint8Array(side.buffer, side.byteOffset, side.byteLength)]))
    }),
    accept: acceptLists(reference.logits[i] as Float32Array, manifest.nVocab),
  }))
  // widths and side values only where some seam is not the hidden state alone, so plain sets stay as they were
  const plain = boundaries.every((seam) => seam.values === manifest.nEmbd && seamSideValues(seam) === 0)
  const seams = plain ? {} : { widths: boundaries.map((seam) => seam.values), sides: boundaries.map(seamSideValues) }
  return ProbeSet.parse({ modelId: manifest.modelId, nLayer: manifest.nLayer, nEmbd: manifest.nEmbd, ...seams, probes })
}

export interface ReferenceRun {
  /** hidden[probe][b - 1]: the f32 input to block b (tokens × the seam's values), for b in 1..nLayer-1. */
  readonly hidden: Float32Array[][]
  /**
   * side[probe][b - 1]: the int32 side values entering block b (tokens
   * × seamSideValues, token-major), where the seam carries any.
   */
  readonly side: (Int32Array | undefined)[][]
  /** logits[probe]: every position's logits (tokens × nVocab). */
  readonly logits: Float32Array[]
}

/**
 * `prompts` run through blocks [b, b + 1) for every b in turn, with f32 seams: one block's weights
 * are loaded at a time (each runtime disposed before the next loads), so the publisher needs no
 * more memory than its largest artifact.
 */
export async function referenceRun(
  manifest: Manifest,
  dir: string,
  prompts: readonly number[][],
  options: Pick<ProbeSetOptions, 'threads' | 'device'>,
): Promise<ReferenceRun> {
  const { nLayer } = manifest
  const hidden: Float32Array[][] = prompts.map(() => [])
  const side: (Int32Array | undefined)[][] = prompts.map(() => [])
  const logits: Float32Array[] = []
  for (let b = 0; b < nLayer; b++) {
    const head = b + 1 === nLayer
    const runtime = await ShardRuntime.load({
      artifacts: artifactsFor(manifest, dir, [b, b + 1]),
      blocks: [b, b + 1],
      embed: b === 0,
      head,
      threads: options.threads,
      device: options.device ?? 'cpu',
    })
    try {
      for (const [i, prompt] of prompts.entries()) {
        const session = runtime.openSession({ maxTokens: prompt.length })
        try {
          const input = b === 0 ? Int32Array.from(prompt) : (hidden[i]?.[b - 1] as Float32Array)
          const seamIn = b === 0 ? undefined : seamAt(manifest, b)
          const seamOut = head ? undefined : seamAt(manifest, b + 1)
          const ids = Int32Array.from(prompt)
          const indicesIn =
            seamIn === undefined ? undefined : splitSide(seamIn, side[i]?.[b - 1] ?? new Int32Array(0)).indices
          // in the chunks the prober sends (all but two rows, then one and one): batched and single-token
          // matmuls round differently, and a mixture-of-experts router near a tie turns that into another expert
          const width = input.length / prompt.length
          const parts: Float32Array[] = []
          const indicesOut: Int32Array[] = []
          let kind = ''
          for (const [from, to] of probeChunks(prompt.length)) {
            const k = seamIn?.int32PerToken ?? 0
            const out = await session.forward(input.subarray(from * width, to * width), {
              positions: from,
              allLogits: head,
              hiddenType: 'f32',
              ...(seamIn?.tokenIds ? { tokenIds: ids.subarray(from, to) } : {}),
              ...(indicesIn === undefined ? {} : { indices: indicesIn.subarray(from * k, to * k) }),
            })
            if (out.dtype !== 'f32' || out.rows !== to - from)
              throw new NeuronError(
                'internal',
                `block ${b} of ${manifest.modelId} returned ${out.rows} ${out.dtype} rows for ${to - from} tokens`,
              )
            parts.push(out.data as Float32Array)
            if (out.kind === 'hidden' && out.indices !== undefined) indicesOut.push(out.indices)
            kind = out.kind
          }
          if (kind === 'logits') logits.push(concatenated(parts, Float32Array))
          else {
            hidden[i]?.push(concatenated(parts, Float32Array))
            side[i]?.push(
              seamOut === undefined || seamSideValues(seamOut) === 0
                ? undefined
                : sideValues(seamOut, ids, concatenated(indicesOut, Int32Array)),
            )
          }
        } finally {
          session.close()
        }
      }
    } finally {
      runtime.dispose()
    }
  }
  return { hidden, side, logits }
}

/** The side values entering a block (token-major: the token id where the seam carries it, then its indices). */
function sideValues(seam: Seam, ids: Int32Array, indices: Int32Array): Int32Array {
  const k = seam.int32PerToken
  if (indices.length !== ids.length * k)
    throw new NeuronError('internal', `the runtime returned ${indices.length} indices for ${ids.length} tokens × ${k}`)
  return joinSide(seam, ids.length, ids, indices)
}

/** Per position: the argmax first, then every token within ACCEPT_LOGIT_MARGIN of it, best first. */
export function acceptLists(logits: Float32Array, nVocab: number, margin = ACCEPT_LOGIT_MARGIN): number[][] {
  const out: number[][] = []
  for (let row = 0; row < logits.length; row += nVocab) {
    const r = logits.subarray(row, row + nVocab)
    let max = Number.NEGATIVE_INFINITY
    for (const x of r) if (x > max) max = x
    const near: number[] = []
    for (let t = 0; t < nVocab; t++) if ((r[t] as number) >= max - margin) near.push(t)
    near.sort((x, y) => (r[y] as number) - (r[x] as number) || x - y)
    out.push(near.slice(0, MAX_ACCEPT))
  }
  return out
}

/**
 * Token ids a probe may use: normal and byte tokens (not control,
 * unknown or unused), or all when the vocabulary says nothing.
 */
async function ordinaryTokens(manifest: Manifest, dir: string): Promise<number[]> {
  const all = Array.from({ length: manifest.nVocab }, (_, t) => t)
  const head = manifest.artifacts.find((a) => a.role === 'head')
  if (head === undefined) return all
  const types = (await readGguf(join(dir, head.file))).kvs.find((kv) => kv.key === 'tokenizer.ggml.token_type')?.value
  if (!Array.isArray(types) || types.length !== manifest.nVocab) return all
  // llama.cpp token types: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte
  const ordinary = all.filter((t) => types[t] === 1 || types[t] === 6)
  return ordinary.length > 0 ? ordinary : all
}
