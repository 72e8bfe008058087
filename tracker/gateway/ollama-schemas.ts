import { z } from 'zod'
import { SAMPLING_BOUNDS } from '../../protocol/chat'
import { ToolChoice } from './openai-schemas'

// Request bodies of Ollama's API (docs/api.md of ollama/ollama), as far as the gateway serves them. Unknown
// fields, and options that concern a local server (num_ctx, num_gpu, num_thread, …), are ignored.

/** A model name, as Ollama's clients send it. */
const ModelName = z.string().min(1).max(256)
/** Tool and function names: OpenAI's limit. */
const FunctionName = z.string().min(1).max(64)
const MAX_TOOLS = 128
const MAX_STOPS = 16

const inRange = (name: string, b: { min: number; max: number }) => {
  const error = `options.${name} is a number from ${b.min} to ${b.max}`
  return z.number({ error }).min(b.min, error).max(b.max, error)
}

export const OllamaOptions = z.object({
  temperature: inRange('temperature', SAMPLING_BOUNDS.temperature).optional(),
  top_p: inRange('top_p', SAMPLING_BOUNDS.topP).optional(),
  top_k: inRange('top_k', SAMPLING_BOUNDS.topK).int().optional(),
  min_p: inRange('min_p', { min: 0, max: 1 }).optional(),
  repeat_penalty: inRange('repeat_penalty', SAMPLING_BOUNDS.repeatPenalty).optional(),
  presence_penalty: inRange('presence_penalty', { min: -2, max: 2 }).optional(),
  frequency_penalty: inRange('frequency_penalty', { min: -2, max: 2 }).optional(),
  /** Negative: a random seed (llama.cpp's -1). */
  seed: z.number().int().min(-1).max(SAMPLING_BOUNDS.seed.max).optional(),
  /** -1 and -2: until the context is full (Ollama's infinite and fill-context). */
  num_predict: z
    .number()
    .int()
    .min(-2)
    .refine((n) => n !== 0, 'options.num_predict is a positive count, or -1 to generate until the context is full')
    .optional(),
  stop: z.array(z.string().max(256)).max(MAX_STOPS).optional(),
})
export type OllamaOptions = z.infer<typeof OllamaOptions>

const ToolCall = z.object({ function: z.object({ name: FunctionName, arguments: z.record(z.string(), z.unknown()) }) })

export const OllamaMessage = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string().default(''),
  /** Base64 images: the swarm's models read text only, so a non-empty list is refused. */
  images: z.array(z.string()).nullish(),
  tool_calls: z.array(ToolCall).max(MAX_TOOLS).nullish(),
  /** On a tool turn: which function's result it carries. */
  tool_name: FunctionName.optional(),
  thinking: z.string().optional(),
})
export type OllamaMessage = z.infer<typeof OllamaMessage>

export const OllamaTool = z.object({
  type: z.literal('function'),
  function: z.object({
    name: FunctionName,
    description: z.string().max(4096).optional(),
    parameters: z.record(z.string(), z.unknown()).optional(),
  }),
})
export type OllamaTool = z.infer<typeof OllamaTool>

/** "json", or a JSON schema the answer must follow; "" is none. */
const Format = z.union([z.enum(['json', '']), z.record(z.string(), z.unknown())]).nullish()
const Think = z.union([z.boolean(), z.enum(['high', 'medium', 'low'])]).nullish()

const Common = {
  model: ModelName,
  /** Absent: streamed, as Ollama does. */
  stream: z.boolean().nullish(),
  format: Format,
  options: OllamaOptions.nullish(),
  keep_alive: z.union([z.string().max(64), z.number()]).nullish(),
  think: Think,
  logprobs: z.boolean().nullish(),
}

export const OllamaChatRequest = z.object({
  ...Common,
  /** Empty: Ollama only loads the model and answers done_reason "load". */
  messages: z.array(OllamaMessage).default([]),
  tools: z.array(OllamaTool).max(MAX_TOOLS).nullish(),
  /** Neuron's extension, as OpenAI's: Ollama's API has no way to force a call ('required', or one named function). */
  tool_choice: ToolChoice.nullish(),
})
export type OllamaChatRequest = z.infer<typeof OllamaChatRequest>

export const OllamaGenerateRequest = z.object({
  ...Common,
  /** Empty: Ollama only loads the model and answers done_reason "load". */
  prompt: z.string().default(''),
  system: z.string().nullish(),
  /** True: the prompt is sent as it is, without the model's chat template. */
  raw: z.boolean().nullish(),
  suffix: z.string().nullish(),
  template: z.string().nullish(),
  context: z
    .array(z.number().int())
    .max(0, 'context (the token ids of an earlier answer) is not supported; send the conversation to /api/chat')
    .nullish(),
  images: z.array(z.string()).nullish(),
})
export type OllamaGenerateRequest = z.infer<typeof OllamaGenerateRequest>

/** Older clients name the model `name`. */
export const OllamaShowRequest = z
  .object({ model: ModelName.optional(), name: ModelName.optional(), verbose: z.boolean().nullish() })
  .refine((r) => r.model !== undefined || r.name !== undefined, {
    message: 'say which model: {"model": "<name>"}',
    path: ['model'],
  })
