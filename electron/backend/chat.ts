import type { z } from 'zod'
import { renderChat } from '../../client/chat-template'
import type { SwarmClient } from '../../client/swarm-client'
import { type AppEventData, type AppEventName, type ChatHop, type ChatRequest, NeuronError, toWireError, type WireError } from '../../protocol'

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

  constructor(private readonly deps: ChatDeps) {}

  send(request: z.output<typeof ChatRequest>): { chatId: string } {
    if (this.running.has(request.chatId)) {
      throw new NeuronError('chat_busy', `chat ${request.chatId} is still answering; stop it or wait for its chat.done before sending again`)
    }
    const controller = new AbortController()
    this.running.set(request.chatId, controller)
    void this.answer(request, controller).finally(() => this.running.delete(request.chatId))
    return { chatId: request.chatId }
  }

  /** Stops an answer in flight (it ends with chat.done, finishReason 'aborted'); a finished chat is left alone. */
  stop(chatId: string): Record<string, never> {
    this.running.get(chatId)?.abort()
    return {}
  }

  /** Ends every answer in flight; with `because`, each ends with a chat.error saying so instead of chat.done. */
  stopAll(because?: string): void {
    for (const c of this.running.values()) c.abort(because === undefined ? undefined : new NeuronError('swarm_changed', because))
  }

  private async answer(request: z.output<typeof ChatRequest>, controller: AbortController): Promise<void> {
    const { chatId } = request
    const client = this.deps.client()
    const trackerUrl = this.deps.trackerUrl()
    let chargedMicro = 0
    let creditsOut: WireError | null = null
    try {
      const tokenizer = await client.tokenizer(request.modelId)
      /** Hosts a route marked unaudited (no second host serves their blocks). */
      const unaudited = new Set<string>()
      const generation = client.generate({
        modelId: request.modelId,
        prompt: renderChat(tokenizer, request.messages),
        maxTokens: request.maxTokens,
        sampling: { temperature: request.temperature, seed: request.seed },
        stopAtEog: true,
        signal: controller.signal,
        onRoute: (hops) => {
          for (const h of hops) if (h.unaudited === true) unaudited.add(h.hostId)
          this.deps.emit('chat.route', {
            chatId,
            hops: hops.map((h) => ({ hostId: h.hostId, blocks: h.blocks, medianMs: null, unaudited: h.unaudited === true })),
          })
        },
        onReceipts: async (session, receipts) => {
          const { verdicts } = await client.submitReceipts(session, receipts)
          for (const v of verdicts) {
            chargedMicro += v.charged
            if (v.code === 'insufficient_credits' && creditsOut === null) {
              creditsOut = {
                code: 'insufficient_credits',
                message: `your account ran out of credits after ${chargedMicro} micro-credits on this answer; host a model to earn more`,
              }
              controller.abort()
            }
          }
        },
      })
      let next = await generation.next()
      while (!next.done) {
        if (creditsOut === null) this.deps.emit('chat.token', { chatId, text: next.value.text, token: next.value.token })
        next = await generation.next()
      }
      // Out of credits, or stopped because the swarm connection changed: no summary, the reason.
      const ended = creditsOut ?? stopReason(controller)
      if (ended !== null) {
        this.deps.emit('chat.error', { chatId, error: ended })
        return
      }
      const s = next.value
      const route: ChatHop[] = s.route.map((h) => ({ hostId: h.hostId, blocks: h.blocks, medianMs: h.medianMs, unaudited: unaudited.has(h.hostId) }))
      this.deps.emit('chat.done', {
        chatId,
        promptTokens: s.promptTokens,
        completionTokens: s.completionTokens,
        finishReason: controller.signal.aborted ? 'aborted' : s.finishReason,
        tokensPerSecond: s.decodeTokensPerSecond,
        route,
        chargedMicro,
      })
    } catch (error) {
      const wire = stopReason(controller) ?? describe(error, client, trackerUrl)
      this.deps.log(`chat ${chatId} failed: ${wire.code}: ${wire.message}`)
      this.deps.emit('chat.error', { chatId, error: wire })
    }
  }
}

/** Why the backend stopped an answer (stopAll with a reason); null when it ran out or the user stopped it. */
function stopReason(controller: AbortController): WireError | null {
  const reason: unknown = controller.signal.reason
  return controller.signal.aborted && reason instanceof NeuronError ? toWireError(reason) : null
}

/** `trackerUrl`: the tracker the answer was asked of, not the one connected now. */
function describe(error: unknown, client: SwarmClient, trackerUrl: string): WireError {
  if (!client.tracker.connected || (error instanceof NeuronError && error.code === 'tracker_unreachable')) {
    return { code: 'tracker_unreachable', message: `lost the tracker at ${trackerUrl}; check that it is running, then send again` }
  }
  return toWireError(error)
}
