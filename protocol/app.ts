import { z } from 'zod'
import { AccessMethods } from './app-access'
import { ChatMethods, ConversationMethods } from './app-chat'
import { EarningsMethods } from './app-earnings'
import { HostingMethods, HostingStatus } from './app-hosting'
import { HubMethods } from './app-hub'
import { LogMethods } from './app-log'
import { Settings, SettingsMethods } from './app-settings'
import { SwarmMethods, TrackerLinkStatus } from './app-swarm'
import { ChatHop, ChatId, ChatSummary } from './chat'
import { NeuronError } from './errors'
import { LanView } from './lan'
import { Count } from './manifest'
import { type Ack, describeIssues, type RpcHandlers, toWireError, WireError } from './rpc'

/*
 * The one contract between the app's renderer and its host backend. Electron carries it over IPC
 * (preload → ipcMain), the browser mode over a WebSocket; both sides parse every message with these
 * schemas. Methods are request/answer pairs; events are pushed by the backend without an answer.
 * Each screen's methods and views live in their own file (app-hosting.ts, app-chat.ts, …); this one
 * assembles them.
 */

export * from './api-access'
export * from './app-access'
export * from './app-chat'
export * from './app-earnings'
export * from './app-hosting'
export * from './app-hub'
export * from './app-log'
export * from './app-settings'
export * from './app-swarm'
export * from './chat'

const Micro = z.number().int()

/**
 * Methods the renderer calls. Errors come back as WireError codes: bad_request (input that fails
 * these schemas), tracker_unreachable, not_gguf, hosting_busy, memory_limit, bad_identity, chat_busy, context_exceeded,
 * and the swarm's own (no_route, insufficient_credits, …); renderer/api/errorText.ts words the ones a
 * user can act on.
 */
export const AppApi = {
  ...HostingMethods,
  ...EarningsMethods,
  ...ChatMethods,
  ...SwarmMethods,
  ...SettingsMethods,
  ...ConversationMethods,
  ...AccessMethods,
  ...HubMethods,
  ...LogMethods,
} as const
export type AppApi = typeof AppApi

/** Events the backend pushes to the renderer. */
export const AppEvents = {
  'hosting.status': HostingStatus,
  'chat.token': z.object({ chatId: ChatId, text: z.string(), token: Count }),
  'chat.route': z.object({ chatId: ChatId, hops: z.array(ChatHop) }),
  'chat.done': ChatSummary,
  'chat.error': z.object({ chatId: ChatId, error: WireError }),
  /** A receipt for this computer's host settled (or was refused): earnings changed. */
  'earnings.receipt': z.object({
    hostId: z.string(),
    ok: z.boolean(),
    modelId: z.string().nullable(),
    earnedMicro: Micro,
    /** Settled, and (from a tracker with escrow) pending. */
    balanceMicro: Micro,
    pendingMicro: Micro.optional(),
  }),
  /** Apps found or lost on the home network, or a pairing moved on. */
  'lan.changed': LanView,
  /** The tracker went away or came back. */
  'swarm.status': TrackerLinkStatus,
  /** The settings changed (any screen, a pairing, an identity import): every screen shows the ones in force. */
  'settings.changed': Settings,
} as const
export type AppEvents = typeof AppEvents
export type AppEventName = keyof AppEvents
export type AppEventData<E extends AppEventName> = z.output<AppEvents[E]>
export type AppMethod = keyof AppApi
export type AppInput<M extends AppMethod> = z.input<AppApi[M]['request']>
export type AppOutput<M extends AppMethod> = z.output<AppApi[M]['response']>

/** What the renderer's bridge exposes, in Electron (preload) and in the browser (WebSocket). */
export interface NeuronBridge {
  call<M extends AppMethod>(method: M, input: AppInput<M>): Promise<AppOutput<M>>
  on<E extends AppEventName>(event: E, listener: (data: AppEventData<E>) => void): () => void
}

/** The WebSocket framing of the browser mode (Electron's IPC carries the same payloads). */
export const AppCallFrame = z.object({ kind: z.literal('call'), id: Count, method: z.string(), input: z.unknown() })
export const AppReplyFrame = z.union([
  z.object({ kind: z.literal('reply'), id: Count, ok: z.literal(true), value: z.unknown() }),
  z.object({ kind: z.literal('reply'), id: Count, ok: z.literal(false), error: WireError }),
])
export const AppEventFrame = z.object({ kind: z.literal('event'), event: z.string(), data: z.unknown() })
export type AppCallFrame = z.infer<typeof AppCallFrame>
export type AppReplyFrame = z.infer<typeof AppReplyFrame>
export type AppEventFrame = z.infer<typeof AppEventFrame>

/** The IPC channel names Electron's preload and main agree on. */
export const IPC_CALL = 'neuron:call'
export const IPC_EVENT = 'neuron:event'

export type AppHandlers = RpcHandlers<AppApi, void>

/**
 * Runs one call from the renderer: parses the input, runs the handler, parses its answer. Never
 * throws: an unknown method, bad input or a failing handler comes back as a typed error, and the
 * backend keeps serving. Electron's ipcMain handler and the WebSocket server both use it.
 */
export async function dispatchAppCall(handlers: AppHandlers, method: string, input: unknown): Promise<Ack<unknown>> {
  if (!Object.hasOwn(AppApi, method)) {
    return {
      ok: false,
      error: {
        code: 'bad_request',
        message: `unknown method "${method}"; the app's methods are ${Object.keys(AppApi).join(', ')}.`,
      },
    }
  }
  const spec = AppApi[method as AppMethod]
  const parsed = spec.request.safeParse(input ?? {})
  if (!parsed.success)
    return { ok: false, error: { code: 'bad_request', message: describeIssues(method, parsed.error) } }
  try {
    const handler = handlers[method as AppMethod] as (request: unknown, context: undefined) => unknown
    return { ok: true, value: spec.response.parse(await handler(parsed.data, undefined)) }
  } catch (error) {
    return { ok: false, error: toWireError(error) }
  }
}

/** The renderer's side of a reply: the parsed value, or the backend's typed error as a NeuronError. */
export function readAppReply<M extends AppMethod>(method: M, ack: unknown): AppOutput<M> {
  const shape = z
    .union([
      z.object({ ok: z.literal(true), value: z.unknown() }),
      z.object({ ok: z.literal(false), error: WireError }),
    ])
    .safeParse(ack)
  if (!shape.success) throw new NeuronError('bad_response', describeIssues(`${method} reply`, shape.error))
  if (!shape.data.ok)
    throw new NeuronError(shape.data.error.code, shape.data.error.message, shape.data.error.details ?? {})
  const value = AppApi[method].response.safeParse(shape.data.value)
  if (!value.success) throw new NeuronError('bad_response', describeIssues(`${method} reply`, value.error))
  return value.data as AppOutput<M>
}

/** Parses a pushed event; `{ error }` (the reason) for an event this contract does not know or a malformed payload. */
export function readAppEvent(event: string, data: unknown): { event: AppEventName; data: unknown } | { error: string } {
  if (!Object.hasOwn(AppEvents, event)) return { error: `unknown event "${event}"` }
  const parsed = AppEvents[event as AppEventName].safeParse(data)
  if (!parsed.success) return { error: describeIssues(event, parsed.error) }
  return { event: event as AppEventName, data: parsed.data }
}
