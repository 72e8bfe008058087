import { forwardFrame, type HopInput } from '../../dataplane/hop-frames'
import { HopFailure } from '../../dataplane/hop-link'
import { FLAG_NO_SAMPLE, NeuronError, REPLAY_STEP_BASE, Receipt, type Route, readTrailer } from '../../protocol'
import { WAIT_FOR_SESSION_MS, whenSessionFree } from '../free-session'
import { planRoute } from '../grant-claim'
import { closeHops, type HopOpener, type HopState, openHops } from '../open-hops'
import { checkedAnswer, checkReceipt } from '../step-audits'
import type { GenerateRequest, GenerationSummary } from './request'
import type { StepRunner } from './step-runner'

/** Hops one generation may replace; the next failure ends it. */
const MAX_FAILOVERS = 4

/**
 * One generation's failovers. When a hop fails it asks the tracker for a replacement span, replays that span's inputs
 * so the KV caches are rebuilt, and the step carries on with the same tokens.
 */
export class Failover {
  /** Hosts that failed in this generation: never planned for it again. */
  private readonly failed: string[] = []
  /** The hops replaced so far, as the summary reports them. */
  readonly replaced: GenerationSummary['failovers'][number][] = []

  constructor(
    private readonly client: HopOpener & { readonly log: (line: string) => void },
    private readonly session: string,
    private readonly maxTokens: number,
    /** Takes the receipts of replayed steps, as it takes those of every step. */
    private readonly collect: (receipts: Receipt[]) => Promise<void>,
  ) {}

  /**
   * Replaces the hop that failed on `runner`'s route; returns where its step resumes (a liar's step runs again from its
   * replacement on). `request`: the generation's, with the sampling a replacement last hop resumes.
   */
  async recover(
    runner: StepRunner,
    error: HopFailure,
    request: GenerateRequest,
  ): Promise<{ from: number; pending: HopInput }> {
    const dead = runner.hops.find((h) => h.hop.hostId === error.hostId)
    if (dead === undefined || this.replaced.length >= MAX_FAILOVERS) throw error
    const started = performance.now()
    this.failed.push(dead.hop.hostId)
    const span = `[${dead.hop.blocks[0]}, ${dead.hop.blocks[1]})`
    this.client.log(`hop ${dead.hop.hostId} ${span} failed (${error.code}: ${error.message}); finding a replacement`)
    // A liar's answers reached every hop after it: those are rebuilt too, and the step runs again.
    const repaired = await this.replaceOnce(runner.hops, dead, request, error.code === 'lied')
    runner.reroute(repaired.hops)
    this.replaced.push({ hostId: dead.hop.hostId, blocks: dead.hop.blocks, recoveryMs: performance.now() - started })
    request.onRoute?.(repaired.hops.map((h) => h.hop))
    this.client.log(`replaced in ${(performance.now() - started).toFixed(0)} ms`)
    return { from: repaired.from, pending: repaired.pending }
  }

  /**
   * replace(), again with another host where the replacement itself fails while it is rebuilt (its link lost mid-
   * replay: a channel its router dropped), within MAX_FAILOVERS in all.
   */
  private async replaceOnce(
    hops: HopState[],
    dead: HopState,
    request: GenerateRequest,
    rebuildAfter: boolean,
  ): Promise<{ hops: HopState[]; from: number; pending: HopInput }> {
    for (let tries = 1; ; tries++) {
      try {
        return await this.replace(hops, dead, request, rebuildAfter)
      } catch (error) {
        const again = error instanceof HopFailure && error.hostId !== dead.hop.hostId
        if (!again || this.replaced.length + tries >= MAX_FAILOVERS) throw error
        this.failed.push(error.hostId)
        this.client.log(`replacement ${error.hostId} failed while rebuilt (${error.code}); finding another`)
      }
    }
  }

  /**
   * Swaps `dead` for hosts covering its span and replays everything it had been sent, but the
   * step in flight, through them (no sampling), so their KV caches hold the same positions.
   * Returns the new route, where to resume, and the input to resume with.
   */
  private async replace(
    hops: HopState[],
    dead: HopState,
    request: GenerateRequest,
    /** The hops after `dead` were fed its answers: rebuild their caches from the replacement's. */
    rebuildAfter: boolean,
  ): Promise<{ hops: HopState[]; from: number; pending: HopInput }> {
    const { session, maxTokens } = this
    dead.link.close()
    const pending = dead.inputs.at(-1)
    if (pending === undefined)
      throw new NeuronError('internal', `host ${dead.hop.hostId} failed before it was sent anything`)
    const at = hops.indexOf(dead)
    const [previousHop, nextHop] = [hops[at - 1]?.hop.hostId, hops[at + 1]?.hop.hostId]
    const stale = rebuildAfter ? hops.slice(at + 1) : []
    const plan = () =>
      planRoute(
        this.client.tracker,
        this.client.identity,
        {
          modelId: request.modelId,
          maxTokens,
          // Hosts already on the route hold this session, and a host opens one session per id.
          exclude: [...this.failed, ...hops.map((h) => h.hop.hostId)],
          span: dead.hop.blocks,
          ...(previousHop === undefined ? {} : { previousHop }),
          ...(nextHop === undefined ? {} : { nextHop }),
          failedHost: dead.hop.hostId,
          ...(stale.length === 0
            ? {}
            : { rebuild: stale.map((h) => ({ hostId: h.hop.hostId, blocks: h.hop.blocks })) }),
          session,
        },
        this.client.log,
        request.signal,
      )
    // The hosts left may all be full for a moment (audits' re-runs hold sessions too): it waits as a new chat does.
    const replacement = await whenSessionFree(
      plan,
      request.waitForSessionMs ?? WAIT_FOR_SESSION_MS,
      request.signal,
      this.client.log,
    )
    const isLast = hops.at(-1) === dead
    const fresh = await openHops(this.client, replacement.hops, session, request, maxTokens, isLast)
    let chunks = dead.inputs.slice(0, -1)
    let replayStep = REPLAY_STEP_BASE
    const after = await reopenRebuilt(this.client, stale, replacement.rebuildTickets, session, request, maxTokens)
    try {
      for (const h of [...fresh, ...after]) {
        chunks = await this.replay(h, chunks, replayStep)
        replayStep += h.inputs.length
      }
    } catch (error) {
      for (const h of fresh) h.link.close()
      throw error
    }
    return { hops: [...hops.slice(0, at), ...fresh, ...(rebuildAfter ? after : hops.slice(at + 1))], from: at, pending }
  }

  /**
   * Rebuilds a hop's cache: sends it `chunks` from position 0 with the no-sample flag, numbered from `firstStep`,
   * checking each receipt. Returns its answers as the next hop's inputs (none from the last hop).
   */
  private async replay(h: HopState, chunks: readonly HopInput[], firstStep: number): Promise<HopInput[]> {
    let position = 0
    let step = firstStep
    const outputs: HopInput[] = []
    h.inputs = []
    h.receipts = []
    h.sketches = []
    for (const chunk of chunks) {
      h.inputs.push(chunk)
      const answer = await h.link.request(
        forwardFrame(chunk, FLAG_NO_SAMPLE, this.session, step++, position, {
          identity: this.client.identity,
          ...h.hop,
        }),
      )
      position += chunk.tokens
      const receipt = readTrailer(answer, Receipt)
      h.sketches.push(checkReceipt(h.hop.hostId, chunk, answer, receipt, h.sampling))
      h.receipts.push(receipt)
      h.lastOutput = new Uint8Array(answer.payload)
      if (receipt !== undefined) await this.collect([receipt])
      if (answer.kind === 'hidden') outputs.push(checkedAnswer(h.hop, answer, undefined))
    }
    return outputs
  }
}

/**
 * Reopens each hop rebuilt after a liar on its failover ticket
 * (a plain ticket refuses replay numbering); they end the route.
 */
async function reopenRebuilt(
  opener: HopOpener,
  stale: HopState[],
  tickets: Route['rebuildTickets'],
  session: string,
  request: GenerateRequest,
  maxTokens: number,
): Promise<HopState[]> {
  if (stale.length === 0) return []
  if (tickets?.length !== stale.length)
    throw new NeuronError(
      'no_ticket',
      `the tracker gave ${tickets?.length ?? 0} failover tickets for the ${stale.length} hops to rebuild; ask again.`,
    )
  await closeHops(stale, session)
  return openHops(
    opener,
    stale.map((h, i) => ({ ...h.hop, ticket: tickets[i] })),
    session,
    request,
    maxTokens,
    true,
  )
}

/**
 * A replacement last hop's sampling: the tokens sampled so far (`generated`) carry its grammar and penalties on where
 * they were.
 */
export function resumedRequest(r: GenerateRequest, generated: readonly number[]): GenerateRequest {
  const s = r.sampling
  if (s?.grammar === undefined && !s?.presencePenalty && !s?.frequencyPenalty) return r
  return { ...r, sampling: { ...s, generated: [...generated] } }
}
