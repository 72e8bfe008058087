import { z } from 'zod'

// Request bodies of OpenAI's API reference, as far as the gateway serves them; unknown fields are ignored.
const Stop = z.union([z.string(), z.array(z.string()).max(4)]).nullish()
const Common = {
  model: z.string().min(1),
  max_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  seed: z.number().int().nullish(),
  stop: Stop,
  n: z.literal(1, 'this gateway returns one choice; n must be 1').nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).nullish(),
}

const TextPart = z.object({ type: z.literal('text'), text: z.string() })
export const ChatMessageInput = z.object({
  role: z.enum(['system', 'developer', 'user', 'assistant']),
  content: z.union([z.string(), z.array(TextPart)]),
})

export const ChatCompletionRequest = z.object({
  ...Common,
  messages: z.array(ChatMessageInput).min(1),
  max_completion_tokens: z.number().int().positive().nullish(),
})
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>

export const CompletionRequest = z.object({
  ...Common,
  prompt: z.union([z.string(), z.array(z.string()).length(1, 'one prompt per request'), z.array(z.number().int().nonnegative()).min(1)]),
  echo: z.literal(false, 'echo is not supported').nullish(),
})
export type CompletionRequest = z.infer<typeof CompletionRequest>

export const CreateAccountRequest = z.object({
  name: z.string().min(1).max(100).optional(),
  /** Micro-credits; default the tracker's starting grant. */
  grant_micro: z.number().int().nonnegative().optional(),
  /** An app's ed25519 public key (base64url): its SwarmClient's receipts charge this account. */
  public_key: z
    .string()
    .regex(/^[A-Za-z0-9_-]{43}$/)
    .optional(),
})
export const GrantRequest = z.object({ micro: z.number().int().positive() })
