import type { IncomingMessage, ServerResponse } from 'node:http'
import type { StoredAccount } from '../ledger/ledger-store'
import type { ChatAnswer, PlannedChat } from './chat-generation'
import type { Chunk } from './chunks'
import type { GatewayDeps } from './deps'
import type { ErrorDialect } from './dialects'
import type { GatewayError } from './errors'
import { abortOnClose, bearer, parse, sendJson } from './http'
import { OllamaChatRequest, OllamaGenerateRequest, OllamaShowRequest } from './ollama-schemas'
import {
  OLLAMA_DEFAULTS,
  ollamaAnswerMessage,
  ollamaChat,
  ollamaDoneReason,
  ollamaGenerateChat,
} from './ollama-translate'
import type { ForeignParams, TranslatedGenerations } from './translated-generations'

/** The Ollama release whose API these endpoints follow (clients check it to know what they may ask). */
export const OLLAMA_API_VERSION = '0.12.0'

const HOW_TO_SEND_KEY =
  "send your Neuron API key as Authorization: Bearer nk-… (the ollama client's headers option: new Ollama({ host, " +
  "headers: { Authorization: 'Bearer nk-…' } }))"
const PARAMS: ForeignParams = { messages: 'messages', tools: 'tools', format: 'format' }

/**
 * Ollama's errors are `{"error": "..."}`; a stream that fails after it began ends with that object as its last line.
 */
export const ollamaDialect: ErrorDialect = {
  body: (e: GatewayError) => ({ error: e.message }),
  endStream(res: ServerResponse, e: GatewayError) {
    if (res.getHeader('content-type') === NDJSON) res.write(`${JSON.stringify({ error: e.message })}\n`)
    res.end()
  },
}

const NDJSON = 'application/x-ndjson'

/** Ollama's /api/chat, /api/generate (NDJSON streams unless stream: false), /api/tags, /api/show and /api/version. */
export class OllamaEndpoints {
  constructor(
    private readonly deps: Pick<GatewayDeps, 'catalog'>,
    private readonly translated: TranslatedGenerations,
  ) {}

  async chat(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = process.hrtime.bigint()
    const account = await this.translated.admit(bearer(req), HOW_TO_SEND_KEY)
    const body = parse(OllamaChatRequest, await this.translated.body(req, 'messages'))
    const model = modelIdOf(body.model, this.deps)
    if (body.messages.length === 0)
      return sendJson(res, 200, { ...loaded(model), message: { role: 'assistant', content: '' } })
    const chat = await this.translated.chat(account, { ...ollamaChat(body), model }, PARAMS, true, 'ollama.chat')
    await this.answer(res, account, model, chat, body.stream !== false, started, {
      piece: (content) => ({ message: { role: 'assistant', content } }),
      last: (a) => ({
        message: ollamaAnswerMessage({
          content: a.content ?? '',
          ...(a.toolCalls === undefined ? {} : { tool_calls: a.toolCalls }),
        }),
      }),
    })
  }

  async generate(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const started = process.hrtime.bigint()
    const account = await this.translated.admit(bearer(req), HOW_TO_SEND_KEY)
    const body = parse(OllamaGenerateRequest, await this.translated.body(req, 'prompt'))
    const model = modelIdOf(body.model, this.deps)
    if (body.prompt === '') return sendJson(res, 200, { ...loaded(model), response: '' })
    const chat = { ...ollamaGenerateChat(body), model }
    const params = { ...PARAMS, messages: 'prompt' }
    // raw: the prompt as it is, the system prompt unused (as Ollama does)
    const planned =
      body.raw === true
        ? await this.translated.text(account, body.prompt, chat, params, 'ollama.generate')
        : await this.translated.chat(account, chat, params, true, 'ollama.generate')
    await this.answer(res, account, model, planned, body.stream !== false, started, {
      piece: (response) => ({ response }),
      last: (a) => ({ response: a.content ?? '' }),
    })
  }

  async tags(req: IncomingMessage, res: ServerResponse): Promise<void> {
    await this.translated.admit(bearer(req), HOW_TO_SEND_KEY)
    const models = this.deps.catalog.summaries().map((m) => {
      const stored = this.deps.catalog.get(m.modelId)
      return {
        name: m.modelId,
        model: m.modelId,
        modified_at: new Date(stored.publishedAt).toISOString(),
        size: m.bytes,
        digest: stored.manifest.source.sha256,
        details: details(stored.manifest.architecture),
      }
    })
    sendJson(res, 200, { models })
  }

  async show(req: IncomingMessage, res: ServerResponse): Promise<void> {
    await this.translated.admit(bearer(req), HOW_TO_SEND_KEY)
    const body = parse(OllamaShowRequest, await this.translated.body(req, 'model'))
    const id = modelIdOf(body.model ?? body.name ?? '', this.deps)
    const { manifest, publishedAt } = this.deps.catalog.get(id)
    const arch = manifest.architecture
    sendJson(res, 200, {
      license: '',
      modelfile: `# served by a Neuron swarm\nFROM ${id}\n`,
      // the defaults this gateway samples with when a request's options leave them out
      parameters: Object.entries(OLLAMA_DEFAULTS)
        .map(([k, v]) => `${k.padEnd(30)} ${v}`)
        .join('\n'),
      template: '',
      system: '',
      details: details(arch),
      model_info: {
        'general.architecture': arch,
        [`${arch}.block_count`]: manifest.nLayer,
        [`${arch}.context_length`]: manifest.contextLength,
        [`${arch}.embedding_length`]: manifest.nEmbd,
        [`${arch}.vocab_size`]: manifest.nVocab,
      },
      capabilities: ['completion'],
      modified_at: new Date(publishedAt).toISOString(),
    })
  }

  version(res: ServerResponse): void {
    sendJson(res, 200, { version: OLLAMA_API_VERSION })
  }

  /**
   * Runs the chat and answers as Ollama does: NDJSON objects with `done: false`, then the final one with
   * `done: true`, done_reason, token counts and durations in ns; or that final object alone, the whole answer in it.
   * An answer that may be tool calls is held until it ends, then streamed as one object (its calls, or its text).
   * A stream starts only once the first text or finish is there, so an error before it gets its own status.
   */
  private async answer(
    res: ServerResponse,
    account: StoredAccount,
    model: string,
    chat: PlannedChat,
    stream: boolean,
    started: bigint,
    shape: { piece: (text: string) => object; last: (answer: ChatAnswer) => object },
  ): Promise<void> {
    const evalStarted = process.hrtime.bigint()
    const run = this.translated.run(account, chat, abortOnClose(res))
    let firstAt: bigint | undefined
    let text = ''
    let next: IteratorResult<Chunk, void> = await run.next()
    if (stream) {
      res.setHeader('content-type', NDJSON) // set, not passed to writeHead: ollamaDialect.endStream looks for it
      res.writeHead(200)
    }
    const line = (part: object, done: boolean) =>
      res.write(`${JSON.stringify({ model, created_at: now(), ...part, done })}\n`)
    for (; !next.done; next = await run.next()) {
      const c = next.value
      firstAt ??= process.hrtime.bigint()
      if (!('done' in c)) {
        text += c.text
        if (stream && chat.streamsText && c.text !== '') line(shape.piece(c.text), false)
        continue
      }
      const answer = chat.answer(text, c.finishReason)
      if (stream && !chat.streamsText) line(shape.last(answer), false)
      const end = process.hrtime.bigint()
      const final = {
        model,
        created_at: now(),
        ...shape.last(stream ? { content: '', toolCalls: undefined, finishReason: answer.finishReason } : answer),
        done: true,
        done_reason: ollamaDoneReason(answer.finishReason),
        total_duration: Number(end - started),
        load_duration: Number(evalStarted - started),
        // as Ollama counts: the prompt tokens evaluated, not those its cache held
        prompt_eval_count: chat.promptTokens - (c.cachedTokens ?? 0),
        prompt_eval_duration: Number((firstAt ?? end) - evalStarted),
        eval_count: c.completionTokens,
        eval_duration: Number(end - (firstAt ?? end)),
      }
      if (stream) res.end(`${JSON.stringify(final)}\n`)
      else sendJson(res, 200, final)
      return
    }
    throw new Error('the generation ended without a finish')
  }
}

/** Ollama names models `name:tag`; a swarm's model id has no tag, so `:latest` is the id itself. */
function modelIdOf(name: string, deps: Pick<GatewayDeps, 'catalog'>): string {
  const id = name.endsWith(':latest') ? name.slice(0, -':latest'.length) : name
  deps.catalog.get(id) // 404 before any work
  return id
}

/** What Ollama answers a request with no prompt: the model is loaded, nothing generated. */
function loaded(model: string) {
  return { model, created_at: now(), done: true, done_reason: 'load' }
}

function details(architecture: string) {
  return {
    parent_model: '',
    format: 'gguf',
    family: architecture,
    families: [architecture],
    parameter_size: '',
    quantization_level: '',
  }
}

function now(): string {
  return new Date().toISOString()
}
