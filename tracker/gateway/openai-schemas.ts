import { z } from 'zod'

// Request bodies of OpenAI's API reference, as far as the gateway serves them; unknown fields are ignored.

/** Choices one request may ask for (each one is a generation, paid for). */
export const MAX_CHOICES = 4
const Stop = z.union([z.string(), z.array(z.string()).max(4)]).nullish()
const Common = {
  model: z.string().min(1),
  max_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().gt(0).max(1).nullish(),
  seed: z.number().int().nullish(),
  stop: Stop,
  n: z.number().int().min(1).max(MAX_CHOICES, `n is at most ${MAX_CHOICES} here`).nullish(),
  presence_penalty: z.number().min(-2).max(2).nullish(),
  frequency_penalty: z.number().min(-2).max(2).nullish(),
  stream: z.boolean().nullish(),
  stream_options: z.object({ include_usage: z.boolean().optional() }).nullish(),
}

const TextPart = z.object({ type: z.literal('text'), text: z.string() })
const Content = z.union([z.string(), z.array(TextPart)])
const FunctionName = z.string().regex(/^[a-zA-Z0-9_-]{1,64}$/, 'a function name is 1 to 64 letters, digits, _ or -')
/** A JSON schema, checked against the supported subset when its grammar is built (json-schema-grammar.ts). */
const JsonSchema = z.record(z.string(), z.unknown())
export const ToolCallInput = z.object({
  id: z.string().min(1).max(256),
  type: z.literal('function'),
  function: z.object({ name: FunctionName, arguments: z.string() }),
})
export const ChatMessageInput = z.discriminatedUnion('role', [
  z.object({ role: z.enum(['system', 'developer', 'user']), content: Content }),
  z.object({
    role: z.literal('assistant'),
    content: Content.nullish(),
    tool_calls: z.array(ToolCallInput).max(64).nullish(),
  }),
  z.object({ role: z.literal('tool'), content: Content, tool_call_id: z.string().min(1).max(256) }),
])
export type ChatMessageInput = z.infer<typeof ChatMessageInput>
const Tool = z.object({
  type: z.literal('function'),
  function: z.object({
    name: FunctionName,
    description: z.string().max(4096).optional(),
    parameters: JsonSchema.optional(),
    strict: z.boolean().nullish(),
  }),
})
export const ToolChoice = z.union([
  z.enum(['none', 'auto', 'required']),
  z.object({ type: z.literal('function'), function: z.object({ name: FunctionName }) }),
])
export const ResponseFormat = z.discriminatedUnion('type', [
  z.object({ type: z.literal('text') }),
  z.object({ type: z.literal('json_object') }),
  z.object({
    type: z.literal('json_schema'),
    json_schema: z.object({
      name: z.string().min(1).max(64),
      description: z.string().optional(),
      schema: JsonSchema.optional(),
      strict: z.boolean().nullish(),
    }),
  }),
])

export const ChatCompletionRequest = z.object({
  ...Common,
  messages: z.array(ChatMessageInput).min(1),
  max_completion_tokens: z.number().int().positive().nullish(),
  tools: z.array(Tool).min(1).max(64).nullish(),
  tool_choice: ToolChoice.nullish(),
  parallel_tool_calls: z.boolean().nullish(),
  response_format: ResponseFormat.nullish(),
  logprobs: z.boolean().nullish(),
  top_logprobs: z.number().int().min(0).max(20).nullish(),
})
export type ChatCompletionRequest = z.infer<typeof ChatCompletionRequest>

export const CompletionRequest = z.object({
  ...Common,
  prompt: z.union([
    z.string(),
    z.array(z.string()).length(1, 'one prompt per request'),
    z.array(z.number().int().nonnegative()).min(1),
  ]),
  echo: z.literal(false, 'echo is not supported').nullish(),
  /** Legacy completions' logprobs: how many most likely tokens to list at each position (0 to 5). */
  logprobs: z.number().int().min(0).max(5).nullish(),
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
