import { randomBytes, randomInt } from 'node:crypto'
import { concatInputs, type HopInput } from '../../dataplane/hop-frames'
import type { HopLink } from '../../dataplane/hop-link'
import { runSpan, type SpanAnswer } from '../../dataplane/span-runner'
import type { NodeIdentity } from '../../identity/keys'
import { manifestSha256, signOpen, signTicket } from '../../identity/tickets'
import {
  concatenated,
  hiddenFloats,
  type Manifest,
  NeuronError,
  type Probe,
  type ProbeSet,
  probeBoundary,
  probeChunks,
  readJson,
  SampledToken,
  SamplingParams,
  SEAM_TOLERANCE,
  SIDE_TOLERANCE,
  seamAt,
  seamDtype,
  seamError,
  seamPercent,
  seamSideValues,
  sideError,
  sideOf,
  sidePerToken,
  splitPayload,
  TICKET_TTL_MS,
  toF16,
} from '../../protocol'

/** What one known-answer probe found. */
export interface ProbeOutcome {
  readonly passed: boolean
  /** The host could not be asked (gone, busy, refused the session): neither a pass nor a lie. */
  readonly inconclusive: boolean
  /** Largest seam error of its hidden-state answers (0 at the last hop, where tokens are checked). */
  readonly error: number
  readonly reason: string
  /** Per-block time of the probe's single-token steps, ms, round trip included. */
  readonly msPerBlock: number | null
}

export interface ProberDeps {
  readonly manifest: (modelId: string) => Manifest
  readonly probes: (modelId: string) => ProbeSet | undefined
  /** The tracker's key: it signs the probe's tickets as it signs any. */
  readonly tracker: NodeIdentity
  /** The client key the probes open sessions with: the gateway's, so a host cannot tell them from paying traffic. */
  readonly client: NodeIdentity
  readonly link: (hostId: string) => Promise<HopLink>
  /**
   * A span the tracker re-runs itself (own-reruns.ts), in process, when `hostId` is the tracker's own id and the span
   * is loaded; its sessions are no host's, so metering is not told of them.
   */
  readonly own?: (hostId: string, modelId: string, blocks: readonly [number, number]) => HopLink | undefined
  /** The model's price per token: a probe's ticket names it like any other (a zero price would give the probe away). */
  readonly price: (modelId: string) => { promptMicroPerToken: number; completionMicroPerToken: number }
  /** Tells metering the session's one hop, so the host's receipts for it are verified (and paid nothing). */
  readonly issue: (
    session: string,
    modelId: string,
    hop: { hostId: string; blocks: readonly [number, number] },
    maxTokens: number,
    promptTokens: number,
  ) => Promise<unknown>
  /** Full by the tracker's count (sessions at the last heartbeat and routed since), not by the host's refusal alone. */
  readonly full: (hostId: string) => boolean
}

/**
 * Runs the publisher's known-answer probes against one host's blocks, and re-runs real steps on a
 * host for audits. Each is an ordinary ticketed session from the gateway's key: a prefill, then
 * single-token steps, as a short chat looks to the host. A probe a full host refuses is opened again
 * in the host's probe slots (its ticket marked probe), which it must answer.
 */
export class Prober {
  constructor(private readonly deps: ProberDeps) {}

  hasProbes(modelId: string): boolean {
    return this.deps.probes(modelId) !== undefined
  }

  /** Probes `blocks` of `modelId` on the host with one of the model's probes, chosen at random. */
  async probe(hostId: string, modelId: string, blocks: readonly [number, number]): Promise<ProbeOutcome> {
    const set = this.deps.probes(modelId)
    if (set === undefined)
      return {
        passed: false,
        inconclusive: true,
        error: 0,
        reason: `${modelId} was published without probes`,
        msPerBlock: null,
      }
    const probe = set.probes[randomInt(set.probes.length)] as Probe
    const head = blocks[1] === set.nLayer
    // in the model's seam precision, as paying traffic sends it
    const input = probeInput(probe, set, blocks[0], seamDtype(this.deps.manifest(modelId)))
    if (input === undefined)
      return {
        passed: false,
        inconclusive: true,
        error: 0,
        reason: `no reference at block ${blocks[0]}`,
        msPerBlock: null,
      }
    const n = probe.tokens.length
    // As a chat: the prompt in one step, then two tokens one at a time (their times are the speed).
    const chunks = probeChunks(n).map(([from, to]) => rows(input, from, to))
    let answers: SpanAnswer[]
    try {
      answers = await this.run(hostId, modelId, blocks, chunks, head, true)
    } catch (error) {
      return {
        passed: false,
        inconclusive: true,
        error: 0,
        reason: `probe not answered: ${(error as Error).message}`,
        msPerBlock: null,
      }
    }
    const decodeMs = Math.max(answers[1]?.ms ?? 0, 0) + Math.max(answers[2]?.ms ?? 0, 0)
    const msPerBlock = decodeMs / 2 / (blocks[1] - blocks[0])
    const span = `blocks [${blocks[0]}, ${blocks[1]})`
    if (head) {
      for (const [i, a] of answers.entries()) {
        const last = [n - 3, n - 2, n - 1][i] as number
        const token = sampledToken(a.frame)
        const accepted = probe.accept[last] ?? []
        if (token === undefined || !accepted.includes(token))
          return {
            passed: false,
            inconclusive: false,
            error: 1,
            reason:
              `failed a known-answer probe on ${span}: answered token ${token ?? a.frame.kind} where ` +
              `${accepted.join(' or ')} was right`,
            msPerBlock,
          }
      }
      return {
        passed: true,
        inconclusive: false,
        error: 0,
        reason: `passed a known-answer probe on ${span}`,
        msPerBlock,
      }
    }
    const reference = probeReference(probe, set, blocks[1])
    if (reference === undefined)
      return {
        passed: false,
        inconclusive: true,
        error: 0,
        reason: `no reference at block ${blocks[1]}`,
        msPerBlock: null,
      }
    const answered = hiddenValues(answers)
    const width = probeBoundary(set, blocks[1]).width
    const error =
      answered === undefined || answered.length !== reference.length
        ? Number.POSITIVE_INFINITY
        : seamError(answered, reference, width)
    if (error > SEAM_TOLERANCE)
      return {
        passed: false,
        inconclusive: false,
        error,
        reason:
          `failed a known-answer probe on ${span}: answer off by ${seamPercent(error)} (honest hosts are ` +
          `within ${seamPercent(SEAM_TOLERANCE)})`,
        msPerBlock,
      }
    // the token ids and indices the answer passes on (where the seam carries any) must be the reference's too
    const seam = seamAt(this.deps.manifest(modelId), blocks[1])
    if (seamSideValues(seam) > 0) {
      const side = sideError(joinedSide(answers), probeSide(probe, set, blocks[1]), seam)
      if (side > SIDE_TOLERANCE)
        return {
          passed: false,
          inconclusive: false,
          error: Math.max(error, side),
          reason:
            `failed a known-answer probe on ${span}: passed on other token ids or indices than the ` +
            `reference's (${seamPercent(side)} of a token's differ)`,
          msPerBlock,
        }
    }
    return {
      passed: true,
      inconclusive: false,
      error,
      reason: `passed a known-answer probe on ${span} (off by ${seamPercent(error)})`,
      msPerBlock,
    }
  }

  /**
   * Runs a hop's steps again on `hostId`: every step but the last as one prefill, then the last (in the shape it ran).
   * Returns both answers: an audit compares every step's rows, and the last answer whole. A last hop's steps run with
   * the session's `sampling`, so its last answer is the token it draws. Throws when the host cannot be asked.
   */
  async rerun(
    hostId: string,
    modelId: string,
    blocks: readonly [number, number],
    steps: readonly HopInput[],
    sampling?: SamplingParams,
  ): Promise<SpanAnswer[]> {
    const chunks = steps.length === 1 ? [...steps] : [concatInputs(steps.slice(0, -1)), steps.at(-1) as HopInput]
    const answers = await this.run(hostId, modelId, blocks, chunks, sampling ?? false)
    if (answers.length !== chunks.length) throw new NeuronError('internal', 'a re-run answered nothing')
    return answers
  }

  /**
   * Runs `chunks` in a session of their own on the host, opened as a client's session looks. `probe`: when
   * the host refuses it as full, it is opened again with the ticket marked probe, for the host's reserved
   * probe slots; so the host tells a probe from a paying session only once it has refused it.
   */
  private async run(
    hostId: string,
    modelId: string,
    blocks: readonly [number, number],
    chunks: HopInput[],
    /** true: greedy with a random seed; sampling: as given (a re-run of a last hop's steps); false: no sampling. */
    sample: boolean | SamplingParams,
    probe = false,
  ): Promise<SpanAnswer[]> {
    const manifest = this.deps.manifest(modelId)
    const session = randomBytes(16).toString('hex')
    const maxTokens = chunks.reduce((s, c) => s + c.tokens, 0)
    const promptTokens = chunks[0]?.tokens ?? 1
    const own = this.deps.own?.(hostId, modelId, blocks)
    if (own === undefined) await this.deps.issue(session, modelId, { hostId, blocks }, maxTokens, promptTokens)
    const open = (marked: boolean) => {
      const ticket = signTicket(this.deps.tracker, {
        session,
        clientKey: this.deps.client.publicKey,
        hostId,
        blocks: [blocks[0], blocks[1]],
        maxTokens,
        promptTokens,
        modelId,
        manifestSha256: manifestSha256(manifest),
        price: this.deps.price(modelId),
        expiresAt: Date.now() + TICKET_TTL_MS,
        ...(marked ? { probe: true as const } : {}),
      })
      return {
        modelId,
        blocks: [blocks[0], blocks[1]] as [number, number],
        maxTokens,
        hiddenDtype: seamDtype(manifest),
        ticket,
        signature: signOpen(this.deps.client, ticket, { blocks, maxTokens }),
        ...(sample === false
          ? {}
          : {
              sampling: SamplingParams.parse(sample === true ? { temperature: 0, seed: randomInt(2 ** 31) } : sample),
            }),
      }
    }
    const link = own ?? (await this.deps.link(hostId))
    try {
      return await runSpan(link, session, open(false), chunks, this.deps.client)
    } catch (error) {
      // Only a host the tracker counts full gets the probe slots: one that says busy with room to spare would
      // otherwise see every probe marked, answer those honestly and lie to everyone else.
      if (!probe || !(error instanceof NeuronError) || !FULL_HOST_CODES.has(error.code) || !this.deps.full(hostId))
        throw error
      // A host older than probe slots refuses the marked ticket (bad_ticket), and that counts like any refusal:
      // excusing it would let any full host that says so go unchecked, the gap the slots close. Updating ends it.
      return await runSpan(link, session, open(true), chunks, this.deps.client)
    } finally {
      link.close()
    }
  }
}

/**
 * What a host answers an open when its sessions are taken: a probe
 * is then opened in its probe slots, if the tracker counts it full.
 */
const FULL_HOST_CODES = new Set(['busy', 'kv_budget_full', 'too_many_sessions'])

/**
 * The probe's input at `block`: token ids at block 0, else the reference
 * hidden states in the seams' precision (and the seam's side values).
 */
function probeInput(probe: Probe, set: ProbeSet, block: number, dtype: 'f16' | 'f32'): HopInput | undefined {
  if (block === 0) {
    const ids = Int32Array.from(probe.tokens)
    return { dtype: 'i32', tokens: ids.length, width: 1, payload: new Uint8Array(ids.buffer) }
  }
  const reference = probeReference(probe, set, block)
  const bytes = probe.hidden[probe.boundaries.indexOf(block)]
  if (reference === undefined || bytes === undefined) return undefined
  const { width, side } = probeBoundary(set, block)
  const bits = dtype === 'f16' ? toF16(reference) : reference
  const values = new Uint8Array(bits.buffer, bits.byteOffset, bits.byteLength)
  const payload = side === 0 ? values : new Uint8Array(Buffer.concat([values, bytes.subarray(reference.byteLength)]))
  return { dtype, tokens: probe.tokens.length, width, payload, ...(side > 0 ? { side } : {}) }
}

/**
 * The reference hidden states entering `block`, f32, without side
 * values (copied: stored bytes may be unaligned views of a Buffer).
 */
export function probeReference(probe: Probe, set: ProbeSet, block: number): Float32Array | undefined {
  const i = probe.boundaries.indexOf(block)
  const bytes = probe.hidden[i]
  if (i < 0 || bytes === undefined) return undefined
  // a copy: `bytes` may be a view into a Buffer's pool (Buffer.slice would be one too)
  return new Float32Array(
    new Uint8Array(bytes.subarray(0, probe.tokens.length * probeBoundary(set, block).width * 4)).buffer,
  )
}

/** The side values entering `block` in the reference (tokens × side int32, token-major). */
function probeSide(probe: Probe, set: ProbeSet, block: number): Int32Array {
  const bytes = probe.hidden[probe.boundaries.indexOf(block)] ?? new Uint8Array(0)
  return new Int32Array(
    new Uint8Array(bytes.subarray(probe.tokens.length * probeBoundary(set, block).width * 4)).buffer,
  )
}

/** The side values of every answer, in order. */
function joinedSide(answers: readonly SpanAnswer[]): Int32Array {
  return concatenated(
    answers.map((a) => (a.frame.kind === 'hidden' ? sideOf(a.frame) : new Int32Array(0))),
    Int32Array,
  )
}

/** Rows [from, to) of an input: their values, then their side values. */
function rows(input: HopInput, from: number, to: number): HopInput {
  const parts = splitPayload(input.payload, input.tokens, input.side ?? 0)
  const rowBytes = parts.values.byteLength / input.tokens
  const sideBytes = (input.side ?? 0) * 4
  const values = parts.values.subarray(from * rowBytes, to * rowBytes)
  const side = parts.side.subarray(from * sideBytes, to * sideBytes)
  return { ...input, tokens: to - from, payload: new Uint8Array(Buffer.concat([values, side])) }
}

/** An answer's hidden states as f32 values (its side values left out); undefined for any other answer. */
export function frameValues(frame: SpanAnswer['frame']): Float32Array | undefined {
  if (frame.kind !== 'hidden' || (frame.dtype !== 'f16' && frame.dtype !== 'f32')) return undefined
  return hiddenFloats(splitPayload(frame.payload, frame.tokens, sidePerToken(frame)).values, frame.dtype)
}

/** The hidden states of every answer, in order, as f32; undefined when any answer is not hidden states. */
function hiddenValues(answers: readonly SpanAnswer[]): Float32Array | undefined {
  const parts: Float32Array[] = []
  for (const { frame } of answers) {
    // Anything but hidden states of whole values is a wrong answer, never an error of the tracker's.
    const values = frameValues(frame)
    if (values === undefined) return undefined
    parts.push(values)
  }
  return concatenated(parts, Float32Array)
}

/** The token a last hop answered, or undefined for anything else (a malformed answer fails the probe). */
function sampledToken(frame: SpanAnswer['frame']): number | undefined {
  if (frame.kind !== 'token') return undefined
  try {
    return readJson(frame, SampledToken).token
  } catch {
    return undefined
  }
}
