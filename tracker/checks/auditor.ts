import type { HopInput } from '../../dataplane/hop-frames'
import {
  type AuditRequest,
  type AuditVerdict,
  concatenated,
  hiddenFloats,
  MAX_AUDITS_IN_FLIGHT,
  NeuronError,
  type SeamFacts,
  seamAt,
  seamSideValues,
  sideOf,
  splitPayload,
} from '../../protocol'

import type { HostRegistry } from '../hosts/registry'
import { STANDBY_TWINS } from '../ledger/standby'
import { AuditEvidence, comparing, type Rows, times } from './audit-evidence'
import { headJudge, type Judge, type SampledRerun } from './head-audit'
import type { HostChecks } from './host-checks'
import type { OwnReruns } from './own-reruns'
import { frameValues, type Prober } from './prober'

/** Who re-runs a hop's steps for its audits: named twins (paid to stand by), or the tracker's own re-run. */
export type AuditedBy = { readonly by: 'twins'; readonly twins: readonly string[] } | { readonly by: 'tracker' }

export interface AuditorDeps {
  readonly registry: HostRegistry
  readonly checks: HostChecks
  readonly prober: Prober
  readonly publicKeyOf: (hostId: string) => Promise<string | undefined>
  /** The hops the tracker issued for a session, and to whom (undefined: it issued none). */
  readonly route: (session: string) => Promise<
    | {
        modelId: string
        issuedTo: string | null
        hops: readonly { hostId: string; blocks: readonly [number, number] }[]
        /** A session started from another's cache: its history begins with that one's (audit-evidence.ts). */
        routed?: { readonly fork?: { readonly session: string; readonly position: number } | undefined } | undefined
      }
    | undefined
  >
  /** The model's blocks and what crosses each seam (its manifest). */
  readonly shape: (modelId: string) => SeamFacts
  /** Audits one key may ask for a minute. */
  readonly perMinute: number
  /** A probe passed this recently decides an audit no other host can re-run (ChecksOptions.auditProbeReuseMs). */
  readonly probeReuseMs: number
  /** Spans the tracker re-runs itself, under its own id (own-reruns.ts): they audit blocks no other host serves. */
  readonly own?: { readonly id: string; readonly reruns: OwnReruns }
}

/**
 * Checks a session's steps of one hop: the client hands in the hop's inputs of the session with the hop's signed
 * receipts (so the history is the host's own), the last answer it got and every step's sketch. The tracker re-runs
 * them on another host of the same blocks and compares every step (audit-evidence.ts). On disagreement a third
 * host decides (two against one); without one, known-answer probes of both do. A liar a probe confirms is banned;
 * nobody is faulted on a tie.
 */
export class Auditor {
  private readonly load = new Map<string, { inFlight: number; minute: number; count: number }>()
  /** Steps already audited (session, host, blocks, history length): each costs other hosts a re-run once only. */
  private readonly audited = new Set<string>()
  /** The hop's history as handed in, checked against its receipts (audit-evidence.ts). */
  private readonly evidence = new AuditEvidence()
  /** Hosts re-running an audited step of their own right now (againOnItself): one at a time each. */
  private readonly selfChecking = new Set<string>()

  constructor(private readonly deps: AuditorDeps) {}

  /** `limited`: false for the tracker's own gateway client, whose audits are its callers' (each rate-limited there). */
  async audit(
    request: AuditRequest,
    requester: { nodeId: string; publicKey: string },
    limited = true,
  ): Promise<AuditVerdict> {
    if (!limited) return this.check(request, requester)
    const load = this.admit(requester.publicKey)
    try {
      return await this.check(request, requester)
    } finally {
      load.inFlight--
    }
  }

  private async check(
    request: AuditRequest,
    { nodeId, publicKey }: { nodeId: string; publicKey: string },
  ): Promise<AuditVerdict> {
    const { hostId, blocks, session } = request
    const route = await this.deps.route(session)
    if (route === undefined)
      throw new NeuronError(
        'unknown_session',
        `the tracker routed no session ${session}; audit only steps of your own sessions.`,
      )
    if (route.issuedTo !== nodeId)
      throw new NeuronError(
        'not_your_session',
        `session ${session} was issued to another client; audit your own sessions.`,
      )
    if (!route.hops.some((h) => h.hostId === hostId && h.blocks[0] === blocks[0] && h.blocks[1] === blocks[1]))
      throw new NeuronError(
        'bad_request',
        `host ${hostId} blocks [${blocks[0]}, ${blocks[1]}) is not a hop of session ${session}.`,
      )
    // Passes it asked for itself would raise its own record; its own steps are never audited for it (route audit 0).
    if (hostId === nodeId)
      throw new NeuronError('own_host', `host ${hostId} is your own key; audits check other people's hosts.`)
    const once = `${session}:${hostId}:${blocks[0]}-${blocks[1]}:${request.steps.length}`
    if (this.audited.has(once))
      throw new NeuronError(
        'already_audited',
        `step ${request.steps.length} of host ${hostId} in session ${session} was audited already.`,
      )
    const model = this.deps.shape(route.modelId)
    const registered = await this.deps.publicKeyOf(hostId)
    const { steps, sketches } = this.evidence.history(request, model, registered, route.routed?.fork)
    if (this.audited.size >= 100_000) this.audited.clear()
    this.audited.add(once)
    const label = `blocks [${blocks[0]}, ${blocks[1]})`
    if (blocks[1] === model.nLayer) {
      const rerun: SampledRerun = (id, history, sampling) =>
        this.deps.prober.rerun(id, route.modelId, blocks, history, sampling)
      const judge = headJudge(request, steps, rerun)
      if ('unchecked' in judge)
        return this.byProbes([hostId], `the last hop's step ${steps.length} on ${label} (${judge.unchecked})`, true)
      return this.decide(hostId, route.modelId, blocks, judge, publicKey)
    }
    // f16 or f32, as the client opened the session: told apart by the answer's size (its side values after them)
    const rows = request.steps.at(-1)?.receipt.tokens ?? 1
    const seam = seamAt(model, blocks[1])
    const width = seam.values
    const sideBytes = rows * seamSideValues(seam) * 4
    const f32 = request.output.byteLength === rows * width * 4 + sideBytes
    const parts = splitPayload(request.output, rows, seamSideValues(seam))
    const values = request.output.byteLength < sideBytes ? undefined : hiddenFloats(parts.values, f32 ? 'f32' : 'f16')
    // a verify step's answer, cut to the rows the route kept of it
    const kept = steps.at(-1)?.tokens ?? rows
    const side = new Int32Array(new Uint8Array(parts.side).buffer)
    if (values === undefined)
      return this.byProbes([hostId], `step ${steps.length} on ${label} (its answer is not hidden states)`, true)
    const answer = { values: values.subarray(0, kept * width), side: side.subarray(0, kept * seamSideValues(seam)) }
    const compare = comparing(steps, sketches, width, seam)
    return this.decide(
      hostId,
      route.modelId,
      blocks,
      {
        run: (id) => this.rerun(id, route.modelId, blocks, steps),
        claimed: (rerun) => compare.claimed(answer, rerun),
        runs: compare.runs,
        checked: sketches === undefined ? `step ${steps.length}` : `all ${steps.length} steps`,
        proves: true,
      },
      publicKey,
    )
  }

  /**
   * Re-runs the hop's steps on another host of its span and compares (`judge`). On disagreement a third host decides
   * (two against one); without one, known-answer probes of both do; with no other host at all, it re-runs them itself.
   */
  private async decide<R>(
    hostId: string,
    modelId: string,
    blocks: readonly [number, number],
    judge: Judge<R>,
    publicKey: string,
  ): Promise<AuditVerdict> {
    const label = `blocks [${blocks[0]}, ${blocks[1]})`
    const { checked } = judge
    const others = this.others(modelId, blocks, [hostId])
    const second = others[0]
    const own = this.deps.own
    if (second === undefined && own?.reruns.link(modelId, blocks) !== undefined)
      return this.byOwnRerun(hostId, own.id, label, judge, publicKey)
    if (second === undefined) return this.againOnItself(hostId, label, judge, publicKey)
    const b = await judge.run(second)
    if (b === undefined)
      return this.byProbes([hostId], `${checked} on ${label} (host ${second} could not re-run it)`, true)
    const errorAB = judge.claimed(b)
    if (errorAB <= 1) {
      this.deps.checks.recordAudit(hostId, true, '')
      return { verdict: 'passed', liar: null, reason: `host ${second} agrees on ${checked} within ${times(errorAB)}` }
    }
    const third = others[1]
    const c = third === undefined ? undefined : await judge.run(third)
    if (third === undefined || c === undefined)
      return this.byProbes(
        [hostId, second],
        `${checked} on ${label}, where ${hostId} and ${second} differ by ${times(errorAB)}`,
      )
    const errorAC = judge.claimed(c)
    const errorBC = judge.runs(b, c)
    if (errorBC <= 1 && errorAC > 1) {
      // Its own re-run, in a session it cannot link to this client,
      // agrees with the two others: it answered the client otherwise.
      const again = judge.proves ? await judge.run(hostId) : undefined
      if (again !== undefined && judge.runs(again, b) <= 1)
        return this.twoWays(hostId, label, checked, judge.claimed(again), publicKey)
      const reason = `failed an audit of real steps on ${label}: answer off by ${times(errorAC)} from two other hosts'`
      return { verdict: 'failed', liar: hostId, reason: await this.convict(hostId, reason, publicKey) }
    }
    if (errorAC <= 1 && errorBC > 1) {
      const reason = `failed an audit re-run on ${label}: answer off by ${times(errorBC)} from two other hosts'`
      this.deps.checks.recordAudit(hostId, true, '')
      return { verdict: 'passed', liar: second, reason: await this.convict(second, reason, publicKey) }
    }
    return { verdict: 'unresolved', liar: null, reason: `three hosts disagree on ${label}; nobody is faulted` }
  }

  /**
   * No other host serves the span: the host re-runs the step itself, in a session from the gateway's key that looks
   * like any other (the history as a prompt, then the step). A liar that is honest on a session's first steps, or
   * with every key but one, answers it honestly, and two answers to the same inputs beyond the tolerance are the
   * host's own doing: a ban. The re-run costs a prefill of the whole history (seconds at 2 000 tokens, where attention
   * dominates), so it runs beside the chat, one per host at a time, and the chat's audit is decided as before (a
   * recent probe, or one now): a lie it finds is punished after the step, not undone. A host that lies the same way
   * every time agrees with itself: for that only a second copy or a known-answer probe tells, and the route marks such
   * a hop unaudited.
   */
  private againOnItself<R>(hostId: string, label: string, judge: Judge<R>, clientKey: string): Promise<AuditVerdict> {
    if (!this.selfChecking.has(hostId)) {
      this.selfChecking.add(hostId)
      void judge
        .run(hostId)
        .then((again) => {
          const error = again === undefined ? 0 : judge.claimed(again)
          if (error <= 1) return
          if (judge.proves) this.twoWays(hostId, label, judge.checked, error, clientKey)
          else this.deps.checks.recordAudit(hostId, false, drewOtherwise(label, judge.checked), clientKey)
        })
        .finally(() => this.selfChecking.delete(hostId))
    }
    return this.byProbes(
      [hostId],
      `${judge.checked} on ${label} (no other host serves it; it re-runs the step itself beside the chat)`,
      true,
    )
  }

  /**
   * No other host serves the span, and the tracker runs it itself: its re-run is the reference. An answer beyond the
   * tolerance from it is a lie, a ban at once as a failed probe is (a sampled draw, which the seams' rounding may move
   * at the edge between two tokens, counts as a failed audit). A re-run that cannot be had falls back to the host's
   * own.
   */
  private async byOwnRerun<R>(
    hostId: string,
    ownId: string,
    label: string,
    judge: Judge<R>,
    clientKey: string,
  ): Promise<AuditVerdict> {
    const reference = await judge.run(ownId)
    if (reference === undefined) return this.againOnItself(hostId, label, judge, clientKey)
    const error = judge.claimed(reference)
    if (error <= 1) {
      this.deps.checks.recordAudit(hostId, true, '')
      return {
        verdict: 'passed',
        liar: null,
        reason: `the tracker's own re-run agrees on ${judge.checked} within ${times(error)}`,
      }
    }
    const off = times(error)
    const reason = `failed an audit of ${judge.checked} on ${label}: off by ${off} from the tracker's own re-run`
    this.deps.checks.recordAudit(hostId, false, reason, clientKey)
    if (judge.proves) this.deps.checks.ban(hostId, reason)
    return { verdict: 'failed', liar: hostId, reason }
  }

  /**
   * The host answered the same inputs two ways (both answers its
   * own, one signed to the client): a ban, no strike count needed.
   */
  private twoWays(hostId: string, label: string, checked: string, error: number, clientKey: string): AuditVerdict {
    const reason =
      `answered ${checked} on ${label} two ways: its answer to a client is off by ${times(error)} ` +
      `from its own re-run of the same inputs`
    this.deps.checks.recordAudit(hostId, false, reason, clientKey)
    this.deps.checks.ban(hostId, reason)
    return { verdict: 'failed', liar: hostId, reason }
  }

  /**
   * Two hosts against one is a strike, not yet a ban: the re-runs are chosen by a client's request, so
   * colluding hosts could be drawn. The accused is probed at once (a failed probe bans it); otherwise the
   * strike counts, and strikes from several clients ban it (HostChecks.recordAudit).
   */
  private async convict(hostId: string, reason: string, clientKey: string): Promise<string> {
    const outcome = await this.deps.checks.probeNow(hostId, true)
    // Counted either way (a failed probe has banned it already).
    this.deps.checks.recordAudit(hostId, false, reason, clientKey)
    return !outcome.inconclusive && !outcome.passed ? `${reason}; then ${outcome.reason}` : reason
  }

  /**
   * Decides by known-answer probes: a host that fails one lied (and is banned by the probe). `reuse`: nothing
   * points at the host (no other host could re-run its step), so a probe it passed for what it serves within
   * probeReuseMs stands for a new one; where two hosts disagree, each is probed now.
   */
  private async byProbes(hostIds: string[], what: string, reuse = false): Promise<AuditVerdict> {
    for (const id of hostIds) {
      const host = this.deps.registry.get(id)
      if (host?.state.modelId == null || host.state.blocks === null || !this.deps.prober.hasProbes(host.state.modelId))
        continue
      const last = this.deps.checks.of(id).lastProbeAt
      if (reuse && last !== null && Date.now() - last < this.deps.probeReuseMs && this.deps.checks.eligible(id)) {
        return {
          verdict: 'unresolved',
          liar: null,
          reason: `${what}: it passed a known-answer probe ${((Date.now() - last) / 1000).toFixed(1)} s ago`,
        }
      }
      const outcome = await this.deps.checks.probeNow(id, true)
      if (!outcome.inconclusive && !outcome.passed) return { verdict: 'failed', liar: id, reason: outcome.reason }
    }
    return { verdict: 'unresolved', liar: null, reason: `${what}: no host disagrees with it on record` }
  }

  /**
   * Who may re-run `hostId`'s steps of `blocks`: other hosts of them (twins: up to STANDBY_TWINS of them, at random,
   * are named to stand by, paid by the session: tracker/ledger/standby.ts), else the tracker where it runs them
   * itself (asking starts loading them); undefined for nobody (a route marks the hop unaudited).
   */
  auditedBy(modelId: string, blocks: readonly [number, number], hostId: string): AuditedBy | undefined {
    const twins = this.others(modelId, blocks, [hostId])
    if (twins.length > 0) return { by: 'twins', twins: twins.slice(0, STANDBY_TWINS) }
    return this.deps.own?.reruns.serves(modelId, blocks) === true ? { by: 'tracker' } : undefined
  }

  /** Hosts that may re-run `blocks`: routable, serving all of them, not the ones named. */
  private others(modelId: string, blocks: readonly [number, number], not: string[]): string[] {
    const ids = this.deps.registry
      .serving(modelId)
      .filter((h) => !not.includes(h.hostId) && h.online && h.state.status === 'ready' && h.state.blocks !== null)
      .filter((h) => (h.state.blocks?.[0] ?? Infinity) <= blocks[0] && blocks[1] <= (h.state.blocks?.[1] ?? -1))
      .filter((h) => this.deps.checks.eligible(h.hostId))
      .map((h) => h.hostId)
    // A random pair, so no host knows it will be the one asked.
    return ids.sort(() => Math.random() - 0.5)
  }

  private async rerun(
    hostId: string,
    modelId: string,
    blocks: readonly [number, number],
    steps: HopInput[],
  ): Promise<Rows | undefined> {
    try {
      const answers = await this.deps.prober.rerun(hostId, modelId, blocks, steps)
      const values = answers.map(({ frame }) => frameValues(frame))
      if (values.some((v) => v === undefined)) return undefined
      return {
        values: concatenated(values as Float32Array[], Float32Array),
        side: concatenated(
          answers.map(({ frame }) => sideOf(frame)),
          Int32Array,
        ),
      }
    } catch {
      return undefined
    }
  }

  private admit(publicKey: string) {
    const minute = Math.floor(Date.now() / 60_000)
    let l = this.load.get(publicKey)
    if (l === undefined) {
      l = { inFlight: 0, minute, count: 0 }
      this.load.set(publicKey, l)
    } else if (l.minute !== minute) {
      // The same record: audits still in flight decrement it when they end.
      l.minute = minute
      l.count = 0
    }
    if (l.inFlight >= MAX_AUDITS_IN_FLIGHT || l.count >= this.deps.perMinute)
      throw new NeuronError(
        'rate_limited',
        `at most ${MAX_AUDITS_IN_FLIGHT} audits at once and ${this.deps.perMinute} a minute per key; audit fewer ` +
          `steps.`,
      )
    l.inFlight++
    l.count++
    if (this.load.size > 10_000)
      for (const [k, v] of this.load) if (v.inFlight === 0 && v.minute !== minute) this.load.delete(k)
    return l
  }
}

/** A sampled draw its host's own re-run drew otherwise: a failed audit, not proof (see Judge.proves). */
function drewOtherwise(label: string, checked: string): string {
  return `drew ${checked} on ${label} otherwise than its own re-run of the same inputs with the same sampling`
}
