// A host that lies, for tests of the tracker's checks (never shipped: the product's Host has only the
// loadRuntime/publishState seams this wraps). Each mode is a way a dishonest volunteer could cheat.

import { Host, type HostOptions } from '../host/host'
import type { ServingRuntime, ServingSession, ServingSessionOptions } from '../host/serving/serving-runtime'
import { type ForwardOptions, type ForwardOutput, ShardRuntime, type ShardRuntimeOptions } from '../native'
import { type Sampled, type SampleParams, SeededRandom, sampleToken } from '../native/sampler'
import { NeuronError, type ServingState } from '../protocol'
import { fromF16 as fromF16Bits, toF16 as toF16Bits } from '../protocol/f16'

export type Lie =
  /** Answers zeros instead of computing. */
  | { readonly kind: 'zeros' }
  /** Adds Gaussian noise of `size` × each row's RMS to every answer. */
  | { readonly kind: 'noise'; readonly size: number }
  /** Serves another model's blocks (same shapes): `artifacts` are that model's GGUF files. */
  | { readonly kind: 'other-model'; readonly artifacts: string[] }
  /** Skips compute: answers the previous answer of the same shape again. */
  | { readonly kind: 'replay' }
  /** Holds only `holds` of the blocks it claims (no head among the missing ones): the rest are skipped. */
  | { readonly kind: 'missing-blocks'; readonly holds: readonly [number, number] }
  /** Computes honestly but passes on other top-k indices (GLM-DSA): each token attends to position 0 alone. */
  | { readonly kind: 'indices' }
  /** Tells the tracker it is `factor` × faster than it is, and is really `delayMs` slower per step. */
  | { readonly kind: 'slow'; readonly factor: number; readonly delayMs: number }

export interface LyingOptions {
  readonly lie: Lie
  /** Sessions answered honestly before the lying starts (the host's own speed measurement is the first). */
  readonly honestSessions?: number
  /** Steps of every session answered honestly before it lies in that session (a known-answer probe is 3 steps). */
  readonly honestSteps?: number
  /** Lies only on these steps of a session (1 is its prompt), honest on every other. */
  readonly onlySteps?: readonly number[]
  /**
   * Lies only in sessions of this client key; honest with every other key (the tracker's probes and audits included).
   */
  readonly onlyKey?: string
  /** Real extra time per step, ms, whatever the lie (a slow host is routed last: it is there to be asked to re-run). */
  readonly delayMs?: number
}

/** A Host whose runtime (and, for `slow`, its advertised speed) lies as told. */
export class LyingHost extends Host {
  /** Forwards answered with a lie so far. */
  lies = 0

  constructor(
    options: HostOptions,
    readonly lying: LyingOptions,
  ) {
    super(options)
  }

  protected override async loadRuntime(options: ShardRuntimeOptions): Promise<ServingRuntime> {
    const { lie } = this.lying
    let load = options
    if (lie.kind === 'other-model') load = { ...options, artifacts: lie.artifacts }
    if (lie.kind === 'missing-blocks') load = { ...options, blocks: [lie.holds[0], lie.holds[1]], head: false }
    return new LyingRuntime(await ShardRuntime.load(load), this, options.blocks)
  }

  protected override publishState(state: ServingState): Promise<void> {
    const { lie } = this.lying
    if (lie.kind !== 'slow' || state.msPerBlock === null) return super.publishState(state)
    // The load-time measurement includes the real delay; the claim divides it.
    return super.publishState({ ...state, msPerBlock: state.msPerBlock / lie.factor })
  }
}

class LyingRuntime implements ServingRuntime {
  private sessions = 0

  constructor(
    private readonly inner: ShardRuntime,
    private readonly host: LyingHost,
    private readonly claimed: readonly [number, number],
  ) {}

  openSession(options: ServingSessionOptions): ServingSession {
    const { lie, honestSessions = 1, onlyKey } = this.host.lying
    const honest = ++this.sessions <= honestSessions || (onlyKey !== undefined && options.clientKey !== onlyKey)
    const claimedBlocks = options.blocks ?? [this.claimed[0], this.claimed[1]]
    const inner =
      lie.kind === 'missing-blocks'
        ? this.inner.openSession({
            maxTokens: options.maxTokens,
            blocks: [Math.max(claimedBlocks[0], lie.holds[0]), Math.min(claimedBlocks[1], lie.holds[1])],
          })
        : this.inner.openSession(options)
    if (honest && lie.kind !== 'missing-blocks' && lie.kind !== 'other-model' && this.host.lying.delayMs === undefined)
      return inner
    return new LyingSession(inner, lie, claimedBlocks, this.host, honest)
  }

  dispose(): void {
    this.inner.dispose()
  }

  /**
   * The family's caches roll back as the runtime's do (so verify steps are taken); without forwardBatch here, each
   * session still runs in a graph of its own.
   */
  get canBatch(): boolean | undefined {
    return this.inner.canBatch
  }

  get canRollBack(): boolean {
    return this.inner.canRollBack
  }

  get rollsBackDrafts(): boolean {
    return this.inner.rollsBackDrafts
  }
}

class LyingSession implements ServingSession {
  private previous = new Map<string, ForwardOutput>()
  private logits: Float32Array | undefined
  private rng: SeededRandom | undefined
  private readonly noise = new SeededRandom(0x5eed)
  private steps = 0

  constructor(
    private readonly inner: ServingSession,
    private readonly lie: Lie,
    private readonly claimed: [number, number],
    private readonly host: LyingHost,
    /** Only the runtime's lies (another model, missing blocks) are told; the answers are not changed. */
    private readonly honestAnswers: boolean,
  ) {}

  get blocks(): [number, number] {
    return [this.claimed[0], this.claimed[1]]
  }

  get takesTokens(): boolean {
    return this.claimed[0] === 0
  }

  async forward(input: Int32Array | Float32Array | Uint16Array, options?: ForwardOptions): Promise<ForwardOutput> {
    const lie = this.lie
    const delayMs = (lie.kind === 'slow' ? lie.delayMs : 0) + (this.host.lying.delayMs ?? 0)
    if (delayMs > 0) await new Promise((r) => setTimeout(r, delayMs))
    const key = `${input.length}`
    const before = this.previous.get(key)
    // honest for the session's first honestSteps steps (a probe's shape), as told
    const step = ++this.steps
    const { honestSteps = 0, onlySteps } = this.host.lying
    const honest = this.honestAnswers || step <= honestSteps || (onlySteps !== undefined && !onlySteps.includes(step))
    if (!honest && lie.kind === 'replay' && before !== undefined) {
      this.host.lies++
      return this.keep(before, honest)
    }
    const out = await this.inner.forward(input, options)
    this.previous.set(key, out)
    if (honest || lie.kind === 'replay' || lie.kind === 'slow') return this.keep(out, honest)
    this.host.lies++
    if (lie.kind === 'zeros') out.data.fill(0)
    if (lie.kind === 'noise') addNoise(out, lie.size, () => this.noise.next())
    if (lie.kind === 'indices' && out.kind === 'hidden' && out.indices !== undefined) {
      const k = out.indices.length / out.rows
      for (let i = 0; i < out.indices.length; i++) out.indices[i] = i % k === 0 ? 0 : -1
    }
    return this.keep(out, honest)
  }

  sample(params: SampleParams = {}, history?: readonly number[]): Sampled {
    if (this.logits === undefined) return this.inner.sample(params, history)
    if (params.seed !== undefined && this.rng?.seed !== params.seed) this.rng = new SeededRandom(params.seed)
    this.rng ??= new SeededRandom(1)
    const rng = this.rng
    return sampleToken(this.logits, params, history ?? [], () => rng.next())
  }

  close(): void {
    this.inner.close()
  }

  /** Logits this wrapper changed are sampled here; honest ones by the runtime. */
  private keep(out: ForwardOutput, honest: boolean): ForwardOutput {
    this.logits = out.kind === 'logits' && !honest ? out.data.subarray((out.rows - 1) * out.cols) : undefined
    return out
  }
}

/** Gaussian noise of `size` × the row's RMS on f32 values, or on f16 bits through f32. */
function addNoise(out: ForwardOutput, size: number, random: () => number): void {
  const values = out.dtype === 'f16' ? fromF16Bits(out.data as Uint16Array) : (out.data as Float32Array)
  for (let row = 0; row < out.rows; row++) {
    const r = values.subarray(row * out.cols, (row + 1) * out.cols)
    const rms = Math.sqrt(r.reduce((s, x) => s + x * x, 0) / r.length) || 1
    for (let i = 0; i < r.length; i++) {
      const gauss = Math.sqrt(-2 * Math.log(1 - random())) * Math.cos(2 * Math.PI * random())
      r[i] = (r[i] as number) + size * rms * gauss
    }
  }
  if (out.dtype === 'f16') (out.data as Uint16Array).set(toF16Bits(values))
}

/**
 * A host that refuses every session past its session limit, the tracker's probes in their reserved
 * slots included: a full host that will not be checked (a last hop judged by probes alone could be
 * full at every probe).
 */
export class ProbeRefusingHost extends Host {
  /** Opens refused past the limit so far: each was a probe, as no client is routed to a full host. */
  refused = 0

  protected override async loadRuntime(options: ShardRuntimeOptions): Promise<ServingRuntime> {
    const inner = await ShardRuntime.load(options)
    return {
      openSession: (o) => {
        if (this.refuses()) {
          this.refused++
          throw new NeuronError('busy', 'this host runs its maximum of sessions and keeps no slot for probes')
        }
        return inner.openSession(o)
      },
      dispose: () => inner.dispose(),
    }
  }

  /** Refuses the next open: past its session limit. */
  protected refuses(): boolean {
    return this.activeSessions >= (this.options.maxSessions ?? 4)
  }
}

/**
 * Says busy to every open whatever its load: were it offered the probe slots, it would see every probe marked
 * and could answer those honestly while lying to everyone else.
 */
export class AlwaysBusyHost extends ProbeRefusingHost {
  /** From when it says busy (after its start, whose speed test and first probe it answers). */
  busy = false
  /**
   * While set, it tells the tracker nothing new (as a host back from a network change, which only says hello): a state
   * update would have the tracker probe it at once, so only the tracker's own retries can route it again.
   */
  quiet = false

  protected override refuses(): boolean {
    return this.busy || super.refuses()
  }

  protected override publishState(state: ServingState): Promise<void> {
    return this.quiet ? Promise.resolve() : super.publishState(state)
  }
}

/**
 * A host that stops answering steps while `stalled` (and answers them when it is set back), yet stays
 * connected and answers pings: its hop link never gives up on it, so only a caller's own bound ends the wait.
 */
export class StallingHost extends Host {
  stalled = false

  protected override async loadRuntime(options: ShardRuntimeOptions): Promise<ServingRuntime> {
    const inner = await ShardRuntime.load(options)
    return {
      openSession: (o) => {
        const session = inner.openSession(o)
        const host = this
        return {
          get blocks() {
            return session.blocks
          },
          get takesTokens() {
            return session.takesTokens
          },
          async forward(input, forwardOptions) {
            while (host.stalled) await new Promise((r) => setTimeout(r, 100))
            return session.forward(input, forwardOptions)
          },
          sample: (...args) => session.sample(...args),
          close: () => session.close(),
        }
      },
      dispose: () => inner.dispose(),
    }
  }
}
