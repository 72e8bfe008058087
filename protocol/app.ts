import { z } from 'zod'
import { MAX_ALLOWED_KEYS } from './allowed-keys'
import { ApiAccessView, ApiRequestLog, CreatedApiKey } from './api-access'
import { BlockRange } from './blocks'
import {
  ChatCount,
  ChatCountRequest,
  ChatHop,
  ChatId,
  ChatRequest,
  ChatSummary,
  Conversation,
  MAX_CONVERSATION_CHARS,
} from './chat'
import { HostChecksView } from './checks'
import { NeuronError } from './errors'
import { NodeId, PublicKey } from './identity'
import { LanName, LanView, PairingId } from './lan'
import { MAX_BLOCKS } from './limits'
import { Count, ModelId } from './manifest'
import { type Ack, describeIssues, type RpcHandlers, rpc, toWireError, WireError } from './rpc'
import { HardwareProfile, HostSummary, ModelSummary, PlacementProposal } from './swarm'

/*
 * The one contract between the app's renderer and its host backend. Electron carries it over IPC
 * (preload → ipcMain), the browser mode over a WebSocket; both sides parse every message with these
 * schemas. Methods are request/answer pairs; events are pushed by the backend without an answer.
 */

const Micro = z.number().int()
const Empty = z.object({}).strict()

/** What the user allows the app to use. null: no limit beyond what the computer has. */
export const Limits = z.object({
  /** Disk the artifacts may take, bytes. */
  diskBytes: z.number().int().positive().nullable(),
  /** Memory the loaded layers may take, bytes. */
  memoryBytes: z.number().int().positive().nullable(),
  /** Threads for the runtime; more than the physical cores makes ggml many times slower. */
  threads: z.number().int().positive().max(256),
  /** Use detected GPUs (CUDA / Vulkan / Metal) when the runtime can. */
  useGpu: z.boolean(),
})
export type Limits = z.infer<typeof Limits>

/**
 * Who sees a chat on the swarm in force. private: the embedded swarm, whose tracker listens on loopback,
 * so every host is on this computer. public: a remote tracker's, where the first host on a route sees
 * the prompt's tokens, the last one the answer's, and every one the hidden states between blocks.
 */
export * from './api-access'
export * from './chat'

export const SwarmPrivacy = z.object({
  level: z.enum(['private', 'public']),
  /** The user agreed to chat on this tracker knowing that (asked once per tracker URL); always true when private. */
  consented: z.boolean(),
})
export type SwarmPrivacy = z.infer<typeof SwarmPrivacy>

export const Settings = z.object({
  /** null: the embedded default, a private tracker in this process. */
  trackerUrl: z.string().url().nullable(),
  /** The tracker the backend is connected to now (the embedded one's loopback URL when trackerUrl is null). */
  connectedTrackerUrl: z.string().url(),
  /** Keys, artifacts, hardware cache and settings live here. */
  dataDir: z.string().min(1),
  publicKey: PublicKey,
  /** This computer's host id on the swarm (derived from the public key). */
  hostId: NodeId,
  limits: Limits,
  /** The backend can show this computer's file dialog (models.pick): true in Electron, false in a browser. */
  canPickFiles: z.boolean(),
  /**
   * Something to tell the user about the settings themselves (the file was unreadable and kept aside); null: nothing.
   */
  notice: z.string().nullable(),
  privacy: SwarmPrivacy,
  /**
   * The embedded swarm's allow-list: only these keys (and this app's own) may join it; null: anyone who can reach it.
   */
  allowedKeys: z.array(PublicKey).max(MAX_ALLOWED_KEYS).nullable(),
  /** The embedded swarm is open to the home network (listens on every interface, advertised by mDNS, pairing). */
  lanOpen: z.boolean(),
})
export type Settings = z.infer<typeof Settings>

/** A change to settings: every field optional; absent fields keep their value. */
export const SettingsUpdate = z
  .object({
    trackerUrl: z.string().url('the tracker URL must be a full URL such as http://127.0.0.1:7070').nullable(),
    dataDir: z.string().min(1, 'give a folder for the data dir'),
    limits: Limits.partial(),
    allowedKeys: z.array(PublicKey).max(MAX_ALLOWED_KEYS, `a swarm lists at most ${MAX_ALLOWED_KEYS} keys`).nullable(),
    lanOpen: z.boolean(),
    /**
     * What a change of tracker does to hosting on the tracker left: resumeOnReturn (the default) stops it
     * and puts it back as it was when the app switches back; stop forgets it.
     */
    hostingOnSwitch: z.enum(['resumeOnReturn', 'stop']),
  })
  .partial()
  .strict()
export type SettingsUpdate = z.infer<typeof SettingsUpdate>

export const ComputerView = z.object({
  profile: HardwareProfile,
  /** Bytes of layers this computer can serve within its limits (memory for weights and KV, disk for artifacts). */
  servableBytes: Count,
  /** One sentence for the user: what the numbers mean for hosting. */
  summary: z.string(),
  limits: Limits,
})
export type ComputerView = z.infer<typeof ComputerView>

export const ArtifactProgress = z.object({
  file: z.string(),
  downloadedBytes: Count,
  totalBytes: Count,
  bytesPerSecond: z.number().nonnegative(),
  peers: Count,
  /** Seconds left at the current speed; null while the speed is unknown. */
  etaSeconds: z.number().nonnegative().nullable(),
})
export type ArtifactProgress = z.infer<typeof ArtifactProgress>

export const HostingPhase = z.enum(['idle', 'downloading', 'loading', 'serving', 'paused', 'stopping', 'failed'])
export type HostingPhase = z.infer<typeof HostingPhase>

export const HostingStatus = z.object({
  phase: HostingPhase,
  modelId: ModelId.nullable(),
  blocks: BlockRange.nullable(),
  /** Per artifact while downloading (and after, at 100 %). */
  artifacts: z.array(ArtifactProgress),
  serving: z
    .object({
      activeSessions: Count,
      maxSessions: Count,
      /** Decode speed of this host's range, tokens/s, from its measured time per block. */
      tokensPerSecond: z.number().nonnegative(),
      /** Block-tokens served since hosting started (from settled receipts). */
      servedBlockTokens: Count,
      startedAt: z.number(),
      endpoint: z.string().nullable(),
    })
    .nullable(),
  /** Why hosting failed (phase 'failed'); null otherwise. */
  error: WireError.nullable(),
})
export type HostingStatus = z.infer<typeof HostingStatus>

/** The tracker's placement proposal plus what it means in credits for this computer. */
export const HostingPreview = z.object({
  placement: PlacementProposal,
  /** Expected micro-credits per hour for the proposed range at full load; null without a proposal. */
  creditsPerHourMicro: Micro.nullable(),
  /** Bytes of each offered range's files already on this computer (absent from older backends). */
  bytesOnDisk: z
    .array(z.object({ blocks: BlockRange, bytes: Count }))
    .max(MAX_BLOCKS + 1)
    .optional(),
})
export type HostingPreview = z.infer<typeof HostingPreview>

export const EarningsPoint = z.object({
  start: z.number(),
  modelId: z.string(),
  earnedMicro: Micro,
  blockTokens: Count,
  receipts: Count,
})
export const RecentReceipt = z.object({
  at: z.number(),
  session: z.string(),
  step: Count,
  modelId: z.string(),
  blocks: BlockRange,
  tokens: Count,
  earnedMicro: Micro,
})
export const Earnings = z.object({
  hostId: NodeId,
  /** Settled earnings: spendable. */
  balanceMicro: Micro,
  /**
   * Earnings still pending in escrow: settled once the settlement window passes, voided if the host is caught cheating.
   */
  pendingMicro: Micro,
  /** How long earnings stay pending, ms; null from a tracker that does not say (one without escrow). */
  settlementWindowMs: Count.nullable(),
  servedBlockTokens: Count,
  byHour: z.array(EarningsPoint),
  byDay: z.array(EarningsPoint),
  recent: z.array(RecentReceipt),
  /**
   * The app's own consumer account (what chat spends); null while unknown. A remote tracker tells only
   * its balance (in the pushes that follow the app's paid answers), so accountId is null there.
   */
  account: z.object({ accountId: z.string().nullable(), balanceMicro: Micro }).nullable(),
})
export type Earnings = z.infer<typeof Earnings>

export const ReputationComponents = z.object({
  uptime: z.number().min(0).max(1),
  completion: z.number().min(0).max(1),
  latency: z.number().min(0).max(1),
  audits: z.number().min(0).max(1),
})
export const ReputationView = z.object({
  hostId: NodeId,
  score: z.number().min(0).max(1),
  components: ReputationComponents,
  completedSteps: Count,
  failedSteps: Count,
  history: z.array(z.object({ at: z.number(), score: z.number() })),
  /** The tracker's fraud checks of this host (probes, audits, probation, a ban); null from a tracker without them. */
  checks: HostChecksView.nullable(),
})
export type ReputationView = z.infer<typeof ReputationView>

export const SwarmView = z.object({
  trackerUrl: z.string().url(),
  hosts: z.array(HostSummary),
  models: z.array(ModelSummary),
  /** This computer's host id, to tell it among the hosts. */
  thisHostId: NodeId,
  /** The computers this app paired with on the home network, by host id. */
  paired: z.array(z.object({ hostId: NodeId, name: LanName })).max(1000),
})
export type SwarmView = z.infer<typeof SwarmView>

/** The backend's link to its tracker, as the sidebar shows it. */
export const TrackerLinkStatus = z.object({
  trackerUrl: z.string(),
  state: z.enum(['connected', 'unreachable']),
  /** Why it is unreachable, in words; null while connected. */
  problem: z.string().nullable(),
  /** When the state last changed, ms since the epoch. */
  since: z.number(),
})
export type TrackerLinkStatus = z.infer<typeof TrackerLinkStatus>

/**
 * Methods the renderer calls. Errors come back as WireError codes: bad_request (input that fails
 * these schemas), tracker_unreachable, not_gguf, hosting_busy, memory_limit, bad_identity, chat_busy, context_exceeded,
 * and the swarm's own (no_route, insufficient_credits, …); renderer/api/errorText.ts words the ones a
 * user can act on.
 */
export const AppApi = {
  'computer.get': rpc(z.object({ refresh: z.boolean().default(false) }).strict(), ComputerView),
  'models.list': rpc(Empty, z.object({ models: z.array(ModelSummary) })),
  /** Packs a GGUF on this computer and publishes it to the tracker (this app seeds it). */
  'models.add': rpc(
    z.object({ path: z.string().min(1, 'give the path of a .gguf file') }).strict(),
    z.object({ modelId: ModelId }),
  ),
  /** Shows the OS file dialog for a .gguf (where Settings.canPickFiles); null when the user cancels. */
  'models.pick': rpc(Empty, z.object({ path: z.string().nullable() })),
  'hosting.preview': rpc(z.object({ modelId: ModelId }).strict(), HostingPreview),
  'hosting.start': rpc(z.object({ modelId: ModelId, blocks: BlockRange }).strict(), HostingStatus),
  /** Drains and unloads, keeping the artifacts; resume loads them again. */
  'hosting.pause': rpc(Empty, HostingStatus),
  'hosting.resume': rpc(Empty, HostingStatus),
  'hosting.stop': rpc(Empty, HostingStatus),
  'hosting.status': rpc(Empty, HostingStatus),
  'earnings.get': rpc(Empty, Earnings),
  'reputation.get': rpc(Empty, ReputationView),
  /** Starts an answer; tokens arrive as chat.token events, then chat.done or chat.error. */
  'chat.send': rpc(ChatRequest, z.object({ chatId: ChatId })),
  'chat.stop': rpc(z.object({ chatId: ChatId }).strict(), Empty),
  /**
   * Counts a conversation's prompt tokens with the model's tokenizer and template, and says the model's context length.
   */
  'chat.count': rpc(ChatCountRequest, ChatCount),
  'swarm.get': rpc(Empty, SwarmView),
  /** Whether the tracker answers now (pushed as swarm.status when that changes). */
  'swarm.status': rpc(Empty, TrackerLinkStatus),
  'settings.get': rpc(Empty, Settings),
  /** Checks everything first (a tracker URL must answer); on any error nothing changes. */
  'settings.update': rpc(SettingsUpdate, Settings),
  /** Records that the user agreed to chat on the tracker in force, a public one (see SwarmPrivacy). */
  'settings.consent': rpc(z.object({ trackerUrl: z.string().url() }).strict(), Settings),
  /** Every conversation kept in the data dir; unreadable: files that could not be read, each kept aside, in words. */
  'conversations.list': rpc(Empty, z.object({ conversations: z.array(Conversation), unreadable: z.array(z.string()) })),
  /** Keeps a conversation (a new one, or a new version of one), written durably before the answer. */
  'conversations.save': rpc(
    z
      .object({
        conversation: Conversation.refine(
          (c) => JSON.stringify(c).length <= MAX_CONVERSATION_CHARS,
          `a conversation is kept up to ${MAX_CONVERSATION_CHARS} characters; start a new chat to go on`,
        ),
      })
      .strict(),
    Empty,
  ),
  'conversations.delete': rpc(z.object({ id: ChatId }).strict(), Empty),
  /** The identity's private key (PKCS#8 PEM) for a backup. */
  'identity.export': rpc(Empty, z.object({ pem: z.string(), publicKey: PublicKey })),
  /** Replaces the identity (hosting must be stopped). */
  'identity.import': rpc(z.object({ pem: z.string().min(1, 'paste a PEM private key') }).strict(), Settings),
  /** The Neuron apps found on the home network, pairings under way and done. */
  'lan.get': rpc(Empty, LanView),
  /** Asks a found app to let this one join its swarm; both screens then show a code. */
  'lan.pair': rpc(z.object({ key: PublicKey }).strict(), LanView),
  /** The user saw the same code on both screens. */
  'lan.confirm': rpc(z.object({ pairingId: PairingId }).strict(), LanView),
  /** The user refused (the codes differ, or it was not asked for). */
  'lan.refuse': rpc(z.object({ pairingId: PairingId }).strict(), LanView),
  /** The swarm's OpenAI-compatible endpoint, and the app's key there (masked). */
  'api.get': rpc(Empty, ApiAccessView),
  /**
   * Makes a key for the app's own account on the embedded tracker,
   * revoking the one before; not_available on a remote tracker.
   */
  'api.createKey': rpc(Empty, CreatedApiKey),
  /** Revokes the app's keys: requests with one get 401 invalid_api_key at once. */
  'api.revokeKey': rpc(Empty, ApiAccessView),
  /** The app account's latest requests through the API (tokens, credits, status), newest first. */
  'api.requests': rpc(Empty, ApiRequestLog),
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
