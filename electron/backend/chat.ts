import { randomInt } from 'node:crypto'
import type { z } from 'zod'
import { CONVERSATION_POSITIONS, type Conversation } from '../../client/generation/conversation'
import type { SwarmClient } from '../../client/swarm-client'
import {
  type AppEventData,
  type AppEventName,
  type ChatCount,
  type ChatHop,
  type ChatMessage,
  type ChatRequest,
  ClientToTracker,
  callRpc,
  NeuronError,
  SAMPLING_BOUNDS,
  toWireError,
  type WireError,
} from '../../protocol'
import { renderChat } from '../../text/chat-template'
import { StopScan } from '../../text/stop-sequences'
import { routingRefusal } from './chat-refusals'

/**
 * Conversations the app keeps open at once (each holds a session on its hops, with its cache, and a credit hold): below
 * a host's sessions per key (3 of its default 4), so a new chat never waits for one of the app's own to be given up.
 */
export const MAX_KEPT_CONVERSATIONS = 2
/** A chat unanswered this long closes its session: its hops free the cache, the tracker charges the rent. */
export const CONVERSATION_IDLE_MS = 5 * 60_000

interface KeptConversation {
  readonly client: SwarmClient
  readonly conversation: Conversation
  idle: NodeJS.Timeout | undefined
}

export interface ChatDeps {
  client(): SwarmClient
  trackerUrl(): string
  emit<E extends AppEventName>(event: E, data: AppEventData<E>): void
  log(line: string): void
}

/**
 * Chats with swarm models: renders the conversation with the model's own template, streams the
 * answer as events and pays for it from the app's account by handing in the hops' receipts as
 * they arrive. One answer per chat id at a time.
 */
export class ChatRunner {
  private readonly running = new Map<string, AbortController>()
  /**
   * Each chat's conversation, kept between its answers so the next sends only its new turn (its hops keep the cache):
   * the most recent MAX_KEPT_CONVERSATIONS, each closed after CONVERSATION_IDLE_MS without an answer.
   */
  private readonly conversations = new Map<string, KeptConversation>()
  /** Context lengths by model id, from the models' manifests (per client: a new swarm may list other models). */
  private readonly contexts = new WeakMap<SwarmClient, Map<string, Promise<number>>>()

  constructor(private readonly deps: ChatDeps) {}

  /**
   * Starts an answer once its prompt is known to fit: a prompt whose tokens plus `maxTokens` exceed the
   * model's context is refused here (context_exceeded, naming the counts), before any host sees it.
   */
  async send(request: z.output<typeof ChatRequest>): Promise<{ chatId: string }> {
    if (this.running.has(request.chatId)) {
      throw new NeuronError(
        'chat_busy',
        `chat ${request.chatId} is still answering; stop it or wait for its chat.done before sending again`,
      )
    }
    const controller = new AbortController()
    this.running.set(request.chatId, controller)
    let prompt: number[]
    let contextLength: number
    const client = this.deps.client()
    const trackerUrl = this.deps.trackerUrl()
    try {
      ;({ prompt, contextLength } = await this.fitting(client, request.modelId, request.messages, request.maxTokens))
    } catch (error) {
      this.running.delete(request.chatId)
      if (error instanceof NeuronError && error.code === 'context_exceeded') throw error
      const wire = describe(error, client, trackerUrl, request.modelId)
      throw new NeuronError(wire.code, wire.message, wire.details ?? {})
    }
    void this.answer(request, { client, trackerUrl, prompt, contextLength }, controller).finally(() =>
      this.running.delete(request.chatId),
    )
    return { chatId: request.chatId }
  }

  /** The conversation's prompt tokens with the model's template, and the model's context length. */
  async count(modelId: string, messages: readonly ChatMessage[]): Promise<ChatCount> {
    const client = this.deps.client()
    const [tokenizer, contextLength] = await Promise.all([
      client.tokenizer(modelId),
      this.contextLength(client, modelId),
    ])
    return { promptTokens: renderChat(tokenizer, messages).length, contextLength }
  }

  /** The model's context length, from its manifest (asked of the tracker once per swarm). */
  async context(modelId: string): Promise<{ contextLength: number }> {
    return { contextLength: await this.contextLength(this.deps.client(), modelId) }
  }

  /** The prompt's tokens, when they and `maxTokens` more fit in the model's context. */
  private async fitting(
    client: SwarmClient,
    modelId: string,
    messages: readonly ChatMessage[],
    maxTokens: number,
  ): Promise<{ prompt: number[]; contextLength: number }> {
    const [tokenizer, contextLength] = await Promise.all([
      client.tokenizer(modelId),
      this.contextLength(client, modelId),
    ])
    const prompt = renderChat(tokenizer, messages)
    if (prompt.length + maxTokens > contextLength) {
      throw new NeuronError(
        'context_exceeded',
        `the prompt is ${prompt.length} tokens and the answer may take ${maxTokens} more: ` +
          `${prompt.length + maxTokens} > ${modelId}'s context of ${contextLength} tokens; shorten the ` +
          `conversation (or start a new one) or lower max tokens`,
        { promptTokens: prompt.length, maxTokens, contextLength },
      )
    }
    return { prompt, contextLength }
  }

  /**
   * The chat's conversation on `client`: kept from its last answer (the swarm unchanged), else a new one; the oldest
   * kept past MAX_KEPT_CONVERSATIONS is closed. Closed after CONVERSATION_IDLE_MS without an answer.
   */
  private async conversation(chatId: string, client: SwarmClient, positions: number): Promise<Conversation> {
    const kept = this.conversations.get(chatId)
    if (kept !== undefined) {
      clearTimeout(kept.idle)
      this.conversations.delete(chatId)
      if (kept.client === client) {
        this.keep(chatId, kept)
        return kept.conversation
      }
      void kept.conversation.close()
    }
    // the oldest given up first, their sessions closed before this one asks for a route (their hosts free the slots)
    const closing: Promise<void>[] = []
    for (const [id, old] of this.conversations) {
      if (this.conversations.size - closing.length < MAX_KEPT_CONVERSATIONS) break
      closing.push(this.forget(id, old))
    }
    await Promise.all(closing)
    const conversation = client.conversation({ positions })
    this.keep(chatId, { client, conversation, idle: undefined })
    return conversation
  }

  /** Keeps the chat's conversation (the most recent last), closing it after CONVERSATION_IDLE_MS. */
  private keep(chatId: string, kept: KeptConversation): void {
    kept.idle = setTimeout(() => void this.forget(chatId, kept), CONVERSATION_IDLE_MS)
    kept.idle.unref()
    this.conversations.set(chatId, kept)
  }

  private forget(chatId: string, kept: KeptConversation): Promise<void> {
    clearTimeout(kept.idle)
    if (this.conversations.get(chatId) === kept) this.conversations.delete(chatId)
    return kept.conversation
      .close()
      .catch((e: Error) => this.deps.log(`closing chat ${chatId}'s session: ${e.message}`))
  }

  /** Closes every kept conversation (the app quits or changes swarm): the hosts free their caches, audits run. */
  async closeConversations(): Promise<void> {
    const kept = [...this.conversations]
    this.conversations.clear()
    for (const [, k] of kept) clearTimeout(k.idle)
    await Promise.all(kept.map(([, k]) => k.conversation.close().catch(() => {})))
  }

  private contextLength(client: SwarmClient, modelId: string): Promise<number> {
    const byModel = this.contexts.get(client) ?? new Map<string, Promise<number>>()
    this.contexts.set(client, byModel)
    let length = byModel.get(modelId)
    if (length === undefined) {
      const asked = callRpc(client.tracker, ClientToTracker, 'model.get', { modelId }).then(
        (m) => m.manifest.contextLength,
      )
      // A failed ask is asked again next time, not remembered.
      asked.catch(() => byModel.get(modelId) === asked && byModel.delete(modelId))
      byModel.set(modelId, asked)
      length = asked
    }
    return length
  }

  /** Stops an answer in flight (it ends with chat.done, finishReason 'aborted'); a finished chat is left alone. */
  stop(chatId: string): Record<string, never> {
    this.running.get(chatId)?.abort()
    return {}
  }

  /** Ends every answer in flight; with `because`, each ends with a chat.error saying so instead of chat.done. */
  stopAll(because?: string): void {
    for (const c of this.running.values())
      c.abort(because === undefined ? undefined : new NeuronError('swarm_changed', because))
  }

  /** `asked`: the swarm the prompt was counted on, and its tokens. */
  private async answer(
    request: z.output<typeof ChatRequest>,
    asked: { client: SwarmClient; trackerUrl: string; prompt: number[]; contextLength: number },
    controller: AbortController,
  ): Promise<void> {
    const { chatId } = request
    const { client, trackerUrl, prompt, contextLength } = asked
    // the session reserves room for the turns to come, within the model's context
    const positions = Math.min(contextLength, Math.max(CONVERSATION_POSITIONS, prompt.length + request.maxTokens))
    let chargedMicro = 0
    let creditsOut: WireError | null = null
    try {
      /** Hosts a route marked unaudited (nobody can re-run their blocks), and who audits the others. */
      const unaudited = new Set<string>()
      const auditedBy = new Map<string, 'twins' | 'tracker'>()
      /** Twins paid to stand by for a hop's audits, by its host. */
      const standby = new Map<string, number>()
      const generation = (await this.conversation(chatId, client, positions)).turn({
        modelId: request.modelId,
        prompt,
        maxTokens: request.maxTokens,
        sampling: samplingOf(request),
        stopAtEog: true,
        signal: controller.signal,
        onRoute: (hops) => {
          for (const h of hops) {
            if (h.unaudited === true) unaudited.add(h.hostId)
            if (h.auditedBy !== undefined) auditedBy.set(h.hostId, h.auditedBy)
            if (h.standby !== undefined) standby.set(h.hostId, h.standby)
          }
          this.deps.emit('chat.route', {
            chatId,
            hops: hops.map((h) => ({
              hostId: h.hostId,
              blocks: h.blocks,
              medianMs: null,
              unaudited: h.unaudited === true,
              ...(h.auditedBy === undefined ? {} : { auditedBy: h.auditedBy }),
              ...(h.standby === undefined ? {} : { standby: h.standby }),
            })),
          })
        },
        onReceipts: async (session, receipts) => {
          const { verdicts } = await client.submitReceipts(session, receipts)
          for (const v of verdicts) {
            chargedMicro += v.charged
            if (v.code === 'insufficient_credits' && creditsOut === null) {
              creditsOut = {
                code: 'insufficient_credits',
                message:
                  `your account ran out of credits after ${chargedMicro} micro-credits on this answer; host ` +
                  `a model to earn more`,
              }
              controller.abort()
            }
          }
        },
      })
      // A stop sequence ends the answer as the user's Stop does (the hops stop at the next step), without its text.
      const stops = new StopScan(request.stop ?? [])
      let stopped = false
      /** The token that ended the text held back (shown with it at the end). */
      let lastToken = 0
      let next = await generation.next()
      while (!next.done) {
        if (creditsOut === null && !stopped) {
          lastToken = next.value.token
          const shown = stops.push(next.value.text)
          if (shown.text !== '') this.deps.emit('chat.token', { chatId, text: shown.text, token: next.value.token })
          if (shown.stopped) {
            stopped = true
            controller.abort()
          }
        }
        next = await generation.next()
      }
      const rest = stopped || creditsOut !== null ? '' : stops.flush()
      if (rest !== '') this.deps.emit('chat.token', { chatId, text: rest, token: lastToken })
      // Out of credits, or stopped because the swarm connection changed: no summary, the reason.
      const ended = creditsOut ?? stopReason(controller)
      if (ended !== null) {
        this.deps.emit('chat.error', { chatId, error: ended })
        return
      }
      const s = next.value
      const route: ChatHop[] = s.route.map((h) => ({
        hostId: h.hostId,
        blocks: h.blocks,
        medianMs: h.medianMs,
        unaudited: unaudited.has(h.hostId),
        ...(auditedBy.has(h.hostId) ? { auditedBy: auditedBy.get(h.hostId) } : {}),
        ...(standby.has(h.hostId) ? { standby: standby.get(h.hostId) } : {}),
      }))
      this.deps.emit('chat.done', {
        chatId,
        promptTokens: s.promptTokens,
        cachedTokens: s.cachedTokens,
        completionTokens: s.completionTokens,
        finishReason: stopped ? 'stop' : controller.signal.aborted ? 'aborted' : s.finishReason,
        tokensPerSecond: s.decodeTokensPerSecond,
        route,
        chargedMicro,
      })
    } catch (error) {
      const wire = stopReason(controller) ?? describe(error, client, trackerUrl, request.modelId)
      // the log keeps the error's own words (a routing refusal's numbers), the chat shows the plain ones
      const own = error instanceof Error && error.message !== wire.message ? ` (${error.message})` : ''
      this.deps.log(`chat ${chatId} failed: ${wire.code}: ${wire.message}${own}`)
      this.deps.emit('chat.error', { chatId, error: wire })
    }
  }
}

/** The host's sampling for a request; without a seed, a fresh one, so each answer (a regenerate too) samples anew. */
export function samplingOf(request: z.output<typeof ChatRequest>) {
  return {
    temperature: request.temperature,
    ...(request.topP === undefined ? {} : { topP: request.topP }),
    ...(request.topK === undefined ? {} : { topK: request.topK }),
    ...(request.repeatPenalty === undefined ? {} : { repeatPenalty: request.repeatPenalty }),
    ...(request.minP === undefined ? {} : { minP: request.minP }),
    seed: request.seed ?? randomInt(SAMPLING_BOUNDS.seed.max),
  }
}

/** Why the backend stopped an answer (stopAll with a reason); null when it ran out or the user stopped it. */
function stopReason(controller: AbortController): WireError | null {
  const reason: unknown = controller.signal.reason
  return controller.signal.aborted && reason instanceof NeuronError ? toWireError(reason) : null
}

/**
 * The error a chat shows: a lost tracker or a routing refusal in plain words, else the error's own. `trackerUrl`: the
 * tracker the answer was asked of, not the one connected now.
 */
function describe(error: unknown, client: SwarmClient, trackerUrl: string, modelId: string): WireError {
  if (!client.tracker.connected || (error instanceof NeuronError && error.code === 'tracker_unreachable')) {
    return {
      code: 'tracker_unreachable',
      message: `lost the tracker at ${trackerUrl}; check that it is running, then send again`,
    }
  }
  return routingRefusal(error, modelId) ?? toWireError(error)
}
