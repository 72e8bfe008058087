import { z } from 'zod'
import { SAMPLING_BOUNDS } from '../../protocol/chat'

// The request body of Anthropic's Messages API (POST /v1/messages), as far as the gateway serves it. Unknown
// fields (metadata, service_tier, cache_control, …) are ignored.

const ToolName = z.string().min(1).max(128)
const MAX_BLOCKS = 4096
const MAX_TOOLS = 128

export const TextBlock = z.object({ type: z.literal('text'), text: z.string() })
const ToolUseBlock = z.object({
  type: z.literal('tool_use'),
  id: z.string().min(1).max(256),
  name: ToolName,
  input: z.record(z.string(), z.unknown()),
})
const ToolResultBlock = z.object({
  type: z.literal('tool_result'),
  tool_use_id: z.string().min(1).max(256),
  content: z.union([z.string(), z.array(TextBlock).max(MAX_BLOCKS)]).optional(),
  is_error: z.boolean().optional(),
})
const KNOWN = new Set(['text', 'tool_use', 'tool_result'])
/** Images, documents, thinking and server tools' blocks: parsed only far enough to refuse them by name. */
const OtherBlock = z.object({
  type: z
    .string()
    .max(64)
    .refine((t) => !KNOWN.has(t)),
})
export const ContentBlock = z.union([TextBlock, ToolUseBlock, ToolResultBlock, OtherBlock])
export type ContentBlock = z.infer<typeof ContentBlock>

export const AnthropicMessage = z.object({
  role: z.enum(['user', 'assistant']),
  content: z.union([z.string(), z.array(ContentBlock).max(MAX_BLOCKS)]),
})
export type AnthropicMessage = z.infer<typeof AnthropicMessage>

export const AnthropicTool = z.object({
  type: z
    .literal('custom', "only your own tools (with an input_schema) are supported, not Anthropic's server tools")
    .optional(),
  name: ToolName,
  description: z.string().max(4096).optional(),
  input_schema: z.record(z.string(), z.unknown()),
})

export const AnthropicToolChoice = z.discriminatedUnion('type', [
  z.object({ type: z.literal('auto'), disable_parallel_tool_use: z.boolean().optional() }),
  z.object({ type: z.literal('any'), disable_parallel_tool_use: z.boolean().optional() }),
  z.object({ type: z.literal('tool'), name: ToolName, disable_parallel_tool_use: z.boolean().optional() }),
  z.object({ type: z.literal('none') }),
])

export const MessagesRequest = z.object({
  model: z.string().min(1).max(256),
  messages: z.array(AnthropicMessage).min(1),
  system: z.union([z.string(), z.array(TextBlock).max(MAX_BLOCKS)]).optional(),
  max_tokens: z.number().int().min(1),
  stop_sequences: z.array(z.string().max(256)).max(16).optional(),
  temperature: z.number().min(0).max(1).optional(),
  top_p: z.number().gt(0).max(1).optional(),
  top_k: z.number().int().min(SAMPLING_BOUNDS.topK.min).max(SAMPLING_BOUNDS.topK.max).optional(),
  stream: z.boolean().optional(),
  tools: z.array(AnthropicTool).max(MAX_TOOLS).optional(),
  tool_choice: AnthropicToolChoice.optional(),
  thinking: z.object({ type: z.string().max(32) }).optional(),
  /** Structured outputs: the answer's text follows `format.schema` (`effort` is ignored). */
  output_config: z
    .object({
      format: z.object({ type: z.literal('json_schema'), schema: z.record(z.string(), z.unknown()) }).nullish(),
    })
    .optional(),
})
export type MessagesRequest = z.infer<typeof MessagesRequest>
