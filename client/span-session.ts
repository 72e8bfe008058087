// One session over blocks [a, b) of a model: a route planned for that span alone (route.plan's `span`), its hops
// opened on their tickets with f32 seams, and steps run through them. The hidden-state SDK (hidden-states.ts)
// chains these: the client sits at every cut between spans, so it reads or changes the state there.
import { randomBytes } from 'node:crypto'
import { forwardFrame, type HopInput } from '../dataplane/hop-frames'
import {
  ClientToTracker,
  callRpc,
  NeuronError,
  Receipt,
  readJson,
  readTrailer,
  SampledToken,
  type SamplingParams,
} from '../protocol'
import { WAIT_FOR_SESSION_MS, whenSessionFree } from './free-session'
import { planRoute } from './grant-claim'
import { closeHops, type HopOpener, type HopState, openHops } from './open-hops'
import { checkedAnswer, checkReceipt } from './step-audits'

/**
 * What a step of a span answers: the state after its last block,
 * or the token the model's head sampled (a span to the end).
 */
export type SpanOutput =
  | { readonly kind: 'hidden'; readonly state: HopInput }
  | { readonly kind: 'token'; readonly sampled: SampledToken }

export interface SpanPlan {
  readonly modelId: string
  readonly blocks: readonly [number, number]
  /** KV positions the session needs: every row it will be sent. */
  readonly maxTokens: number
  /** Of those, the rows of the first step (priced as prompt tokens). */
  readonly promptTokens: number
  /**
   * The session id (32 hex digits); the gateway picks it to hold credits and sponsor it first. Default a random one.
   */
  readonly session?: string
  /** The last hop's sampling, for a span that ends at the model's last block. */
  readonly sampling?: SamplingParams
  readonly signal?: AbortSignal
  /** How long to wait for a free session while every host that could serve is full (default 30 s); 0 fails at once. */
  readonly waitForSessionMs?: number
}

/** A span's hops, open; `close` ends the session on every hop and at the tracker. */
export class SpanSession {
  /** Every hop's signed receipt for every step, in order. */
  readonly receipts: Receipt[] = []

  private constructor(
    private readonly client: HopOpener,
    readonly session: string,
    readonly blocks: readonly [number, number],
    private readonly hops: HopState[],
  ) {}

  /**
   * Plans a route over `plan.blocks` (the tracker holds its credits and tickets each hop) and opens it; while every
   * host that could serve is full, it waits for a free session as a chat does (up to `plan.waitForSessionMs`).
   */
  static async open(client: HopOpener, plan: SpanPlan, log: (line: string) => void = () => {}): Promise<SpanSession> {
    const session = plan.session ?? randomBytes(16).toString('hex')
    const blocks: [number, number] = [plan.blocks[0], plan.blocks[1]]
    // f32 seams: what the caller reads is what the blocks computed, with no f16 rounding between hops.
    const request = {
      modelId: plan.modelId,
      prompt: [],
      maxTokens: plan.maxTokens,
      hiddenDtype: 'f32' as const,
      sampling: plan.sampling ?? {},
    }
    const opening = async () => {
      const route = await planRoute(
        client.tracker,
        client.identity,
        {
          modelId: plan.modelId,
          maxTokens: plan.maxTokens,
          promptTokens: plan.promptTokens,
          exclude: [],
          span: blocks,
          session,
        },
        log,
        plan.signal,
      )
      return openHops(client, route.hops, session, request, plan.maxTokens, true)
    }
    try {
      return new SpanSession(
        client,
        session,
        blocks,
        await whenSessionFree(opening, plan.waitForSessionMs ?? WAIT_FOR_SESSION_MS, plan.signal, log),
      )
    } catch (error) {
      await endAtTracker(client, session)
      throw error
    }
  }

  /** The hosts serving this span, in order, with the blocks each runs. */
  get route(): readonly { readonly hostId: string; readonly blocks: readonly [number, number] }[] {
    return this.hops.map((h) => ({ hostId: h.hop.hostId, blocks: h.hop.blocks }))
  }

  /**
   * Runs one step (`step` from 1, rows at `position` on) through every hop. `input`: token ids for a span from block
   * 0, else the state after block a − 1. Each hop's receipt is checked against the bytes sent and answered.
   */
  async step(step: number, position: number, input: HopInput, ids: Int32Array | undefined): Promise<SpanOutput> {
    let current = input
    for (const h of this.hops) {
      const answer = await h.link.request(
        forwardFrame(current, 0, this.session, step, position, { identity: this.client.identity, ...h.hop }),
      )
      const receipt = readTrailer(answer, Receipt)
      checkReceipt(h.hop.hostId, current, answer, receipt)
      if (receipt !== undefined) this.receipts.push(receipt)
      if (answer.kind === 'token') return { kind: 'token', sampled: readJson(answer, SampledToken) }
      if (answer.kind !== 'hidden')
        throw new NeuronError('bad_frame', `host ${h.hop.hostId} answered a forward with ${answer.kind}`)
      current = checkedAnswer(h.hop, answer, ids)
    }
    return { kind: 'hidden', state: current }
  }

  /** Closes the session on every hop and tells the tracker it ended, so the rest of its credit hold is free. */
  async close(): Promise<void> {
    await closeHops(this.hops, this.session)
    await endAtTracker(this.client, this.session)
  }
}

async function endAtTracker(client: HopOpener, session: string): Promise<void> {
  await callRpc(client.tracker, ClientToTracker, 'session.end', { session }).catch(() => {})
}
