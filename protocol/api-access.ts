import { z } from 'zod'
import { ModelId } from './manifest'

/** An API key as the app shows it after making it: never the key itself (only its sha256 is stored). */
export const ApiKeyHint = z.object({
  /** The key's first characters and last four, masked between: "nk-Ab…wxyz". */
  masked: z.string().min(1).max(40),
  createdAt: z.number(),
})
export type ApiKeyHint = z.infer<typeof ApiKeyHint>

/** The OpenAI-compatible API of the swarm the app is on, as the API screen shows it. */
export const ApiAccessView = z.object({
  /**
   * The gateway's base URL, `<tracker url>/v1` (the embedded tracker keeps its port across restarts); with the
   * home-network switch on, at this computer's address on the LAN, for other computers there.
   */
  endpoint: z.string().url(),
  /**
   * The embedded tracker, and so the API, listens on every interface
   * (Settings' home-network switch); false: this computer only.
   */
  lanOpen: z.boolean(),
  /**
   * The embedded tracker: the app makes keys for its own account.
   * false: a remote tracker, whose operator hands out keys.
   */
  embedded: z.boolean(),
  /** The swarm's models, for the examples; empty while none is published. */
  modelIds: z.array(ModelId).max(1000),
  /** The app's key on the embedded tracker, masked; null: none made (or revoked), and always on a remote tracker. */
  key: ApiKeyHint.nullable(),
})
export type ApiAccessView = z.infer<typeof ApiAccessView>

/** A key just made: shown in full this once. */
export const CreatedApiKey = z.object({ apiKey: z.string().startsWith('nk-'), view: ApiAccessView })
export type CreatedApiKey = z.infer<typeof CreatedApiKey>

/** How the app masks a key for later display: enough to tell keys apart, too little to use. */
export function maskApiKey(key: string): string {
  return `${key.slice(0, 5)}…${key.slice(-4)}`
}

/** How many requests the API tab's log lists at most (the tracker keeps them all). */
export const API_REQUEST_LOG_MAX = 100

/** One request to the API with the app's key, as the request log shows it. */
export const ApiRequestRow = z.object({
  startedAt: z.number(),
  /**
   * The route that asked: 'chat.completions', 'completions', 'ollama.chat', 'ollama.generate' or 'anthropic.messages'.
   */
  endpoint: z.string().max(40),
  modelId: ModelId,
  promptTokens: z.number().int().nonnegative(),
  /** So far while it runs. */
  completionTokens: z.number().int().nonnegative(),
  /** What the account was charged for it, micro-credits (steps, relays, rent), as settled so far. */
  chargedMicro: z.number().int(),
  /** 'running', 'completed', 'cancelled' (the caller hung up) or the error code it ended with. */
  status: z.string().max(64),
})
export type ApiRequestRow = z.infer<typeof ApiRequestRow>

/** The app account's latest API requests, newest first; empty on a remote tracker (its operator keeps its log). */
export const ApiRequestLog = z.object({ requests: z.array(ApiRequestRow).max(API_REQUEST_LOG_MAX) })
export type ApiRequestLog = z.infer<typeof ApiRequestLog>
