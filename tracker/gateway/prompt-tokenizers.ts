import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import type { IncomingMessage } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Worker } from 'node:worker_threads'
import { NeuronError } from '../../protocol'
import { type ChatFunctions, type ChatMessage, chatHistoryOf } from '../../text/chat-template'
import type { ModelCatalog } from '../models/catalog'
import { GatewayError } from './errors'
import { MAX_BODY_BYTES, readBody } from './http'
import { promptBodyBound, type Tokenized } from './prompt-bounds'

export type { Tokenized } from './prompt-bounds'

/**
 * The worker's whole program, plain JavaScript evaluated as a script (a .ts worker would need tsx's loader,
 * which the app, the CLI and vitest provide differently): the model's tokenizer, loaded vocabulary-only.
 * `encode` is ModelTokenizer.encode and `chat` is renderChat (client/), line for line (with tools besides); the
 * gateway's tests check that the usage they count equals the swarm client's.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const loaded = (async () => {
  const { getLlama, LlamaLogLevel, LlamaText, resolveChatWrapper } = await import(workerData.llama)
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, logger: () => {} })
  const model = await llama.loadModel({ modelPath: workerData.path, vocabOnly: true, gpuLayers: 0 })
  let longest = 0
  for (let token = 0; token < workerData.nVocab; token++)
    longest = Math.max(longest, model.detokenize([token], false).length)
  let wrapper
  const encode = (text) => {
    const bos = model.tokens.bos
    const ids = [...model.tokenize(text)]
    return bos !== null && model.tokens.shouldPrependBosToken ? [bos, ...ids] : ids
  }
  const chat = (history, functions) => {
    wrapper ??= resolveChatWrapper(model, { warningLogs: false })
    // A model without a chat template gets node-llama-cpp's closest wrapper and, for tools, a short list of them
    // (the wrappers' own documentation outgrows a small model's context): see the README's tool calls.
    if (functions !== undefined && model.fileInfo.metadata.tokenizer.chat_template === undefined)
      wrapper.generateAvailableFunctionsSystemText = (fns) =>
        LlamaText([
          'Tools, called as ', callExample, ':\\n',
          ...Object.entries(fns).map(([n, f]) =>
            n + '(' + JSON.stringify(f.params ?? {}) + ') ' + (f.description ?? '') + '\\n'),
        ])
    const state = wrapper.generateContextState({ chatHistory: history, availableFunctions: functions })
    return [...state.contextText.tokenize(model.tokenizer)]
  }
  wrapper = resolveChatWrapper(model, { warningLogs: false })
  const syntax = JSON.parse(JSON.stringify(wrapper.settings.functions))
  const callExample = LlamaText([wrapper.settings.functions.call.prefix, 'name',
    wrapper.settings.functions.call.paramsPrefix, '{...}', wrapper.settings.functions.call.suffix]).toString()
  return { longest, encode, chat, syntax }
})()
loaded.then(
  (t) => parentPort.postMessage({ ready: true, longest: t.longest, syntax: t.syntax }),
  (e) => parentPort.postMessage({ ready: false, error: String(e && e.message ? e.message : e) }),
)
parentPort.on('message', async (m) => {
  try {
    const t = await loaded
    const tokens = m.op === 'encode' ? t.encode(m.text) : t.chat(m.history, m.functions)
    // past the limit only the count: a 3.9 MB prompt's million ids cost the main thread more to take in than to refuse
    if (tokens.length > m.limit) return parentPort.postMessage({ id: m.id, count: tokens.length })
    const ids = Int32Array.from(tokens)
    parentPort.postMessage({ id: m.id, ids }, [ids.buffer])
  } catch (e) {
    parentPort.postMessage({ id: m.id, error: String(e && e.message ? e.message : e) })
  }
})
`

/** One model's prompts tokenized on a worker thread: a 3.9 MB prompt took 2 s of native, synchronous tokenizing. */
export interface PromptTokenizer {
  /** Characters of the vocabulary's longest token (SentencePiece's leading space not counted). */
  readonly longestTokenChars: number
  /**
   * A plain-text prompt's tokens, with the BOS token when the model
   * wants one (ModelTokenizer.encode); ids only up to `limit`.
   */
  encode(text: string, limit?: number): Promise<Tokenized>
  /**
   * OpenAI messages rendered with the model's chat template to
   * the assistant's turn (renderChat); ids only up to `limit`.
   */
  chat(messages: readonly ChatMessage[], limit?: number, functions?: ChatFunctions): Promise<Tokenized>
  /** How the model's chat template writes a function call (node-llama-cpp's ChatWrapperSettings.functions, as JSON). */
  readonly functionSyntax: unknown
}

type Reply =
  | { readonly id: number; readonly ids: Int32Array }
  | { readonly id: number; readonly count: number }
  | { readonly id: number; readonly error: string }

/**
 * A worker thread per model whose prompts the gateway tokenizes, started on first use from the tokenizer its
 * catalog holds (checked against the manifest when it was published), so the tracker's event loop never runs
 * a tokenizer. A worker that fails is replaced on the next prompt.
 */
export class PromptTokenizers {
  private readonly workers = new Map<string, Promise<WorkerTokenizer>>()
  /** The longest token's characters of each model whose tokenizer has loaded once. */
  private readonly longest = new Map<string, number>()

  constructor(private readonly catalog: Pick<ModelCatalog, 'get' | 'manifests'>) {}

  /**
   * The largest prompt body that could fit one of the catalog's contexts (promptBodyBound), and the largest
   * context; `fallback` bytes while a model's tokenizer has not loaded yet (its longest token is not known).
   */
  largestPromptBody(fallback: number): { bytes: number; contextLength: number } {
    let bytes = 0
    let contextLength = 0
    for (const m of this.catalog.manifests()) {
      const longest = this.longest.get(m.modelId)
      if (longest === undefined || m.contextLength === 0) return { bytes: fallback, contextLength: 0 }
      bytes = Math.max(bytes, promptBodyBound(m.contextLength, longest))
      contextLength = Math.max(contextLength, m.contextLength)
    }
    return { bytes: Math.min(fallback, bytes), contextLength }
  }

  /**
   * A request body whose `param` holds a prompt, refused unparsed past the largest that could fit one of the models'
   * contexts; before every model's tokenizer has loaded once, only MAX_BODY_BYTES bounds it.
   */
  readPromptBody(req: IncomingMessage, param: string): Promise<unknown> {
    const { bytes, contextLength } = this.largestPromptBody(MAX_BODY_BYTES)
    if (contextLength === 0) return readBody(req)
    const tooLong = new GatewayError(
      400,
      'invalid_request_error',
      'context_length_exceeded',
      `This request is longer than ${bytes} bytes: no prompt that long fits the context of a model here (at most ` +
        `${contextLength} tokens). Please reduce the length of the ${param}.`,
      param,
    )
    return readBody(req, bytes, () => tooLong)
  }

  get(modelId: string): Promise<PromptTokenizer> {
    let worker = this.workers.get(modelId)
    if (worker === undefined) {
      worker = WorkerTokenizer.start(modelId, this.catalog.get(modelId), () => this.workers.delete(modelId))
      this.workers.set(modelId, worker)
      worker.then(
        (w) => this.longest.set(modelId, w.longestTokenChars),
        () => this.workers.delete(modelId),
      )
    }
    return worker
  }

  async close(): Promise<void> {
    const workers = [...this.workers.values()]
    this.workers.clear()
    await Promise.all(workers.map(async (w) => (await w.catch(() => undefined))?.terminate()))
  }
}

class WorkerTokenizer implements PromptTokenizer {
  private readonly waiting = new Map<number, { resolve: (tokens: Tokenized) => void; reject: (error: Error) => void }>()
  private nextId = 0
  private failed: Error | undefined

  private constructor(
    private readonly modelId: string,
    private readonly worker: Worker,
    readonly longestTokenChars: number,
    readonly functionSyntax: unknown,
    onExit: () => void,
  ) {
    worker.on('message', (m: Reply) => {
      const w = this.waiting.get(m.id)
      this.waiting.delete(m.id)
      if ('ids' in m) w?.resolve({ count: m.ids.length, ids: Array.from(m.ids) })
      else if ('count' in m) w?.resolve({ count: m.count, ids: undefined })
      else
        w?.reject(
          new GatewayError(500, 'server_error', 'tokenizer_failed', `tokenizing for ${modelId} failed: ${m.error}`),
        )
    })
    const fail = (error: Error) => {
      this.failed = new GatewayError(
        500,
        'server_error',
        'tokenizer_failed',
        `the tokenizer worker of ${modelId} stopped (${error.message}); retry.`,
      )
      for (const w of this.waiting.values()) w.reject(this.failed)
      this.waiting.clear()
      onExit()
    }
    worker.on('error', fail)
    worker.on('exit', (code) => fail(new Error(`exit code ${code}`)))
  }

  static async start(
    modelId: string,
    model: { tokenizer: Uint8Array; manifest: { nVocab: number } },
    onExit: () => void,
  ): Promise<WorkerTokenizer> {
    // A directory of our own (mode 0700, unguessable name), as ModelTokenizer.load makes: nobody can swap the file.
    const dir = await mkdtemp(join(tmpdir(), 'neuron-gateway-tokenizer-'))
    try {
      const path = join(dir, 'tokenizer.gguf')
      await writeFile(path, model.tokenizer, { flag: 'wx', mode: 0o600 })
      const worker = new Worker(WORKER_SOURCE, {
        eval: true,
        workerData: { llama: import.meta.resolve('node-llama-cpp'), path, nVocab: model.manifest.nVocab },
      })
      // The tracker's exit does not wait for its tokenizers.
      worker.unref()
      const ready = await new Promise<{ longest: number; syntax: unknown }>((resolve, reject) => {
        worker.once('message', (m: { ready: boolean; longest?: number; syntax?: unknown; error?: string }) =>
          m.ready
            ? resolve({ longest: m.longest ?? 0, syntax: m.syntax })
            : reject(new Error(m.error ?? 'the tokenizer did not load')),
        )
        worker.once('error', reject)
      }).catch(async (error: Error) => {
        await worker.terminate()
        throw new GatewayError(
          500,
          'server_error',
          'tokenizer_failed',
          `the tokenizer of ${modelId} did not load on its worker: ${error.message}`,
        )
      })
      return new WorkerTokenizer(modelId, worker, ready.longest, ready.syntax, onExit)
    } finally {
      await rm(dir, { recursive: true, force: true }).catch(() => {})
    }
  }

  encode(text: string, limit = Number.POSITIVE_INFINITY): Promise<Tokenized> {
    return this.ask({ op: 'encode', text, limit })
  }

  chat(
    messages: readonly ChatMessage[],
    limit = Number.POSITIVE_INFINITY,
    functions?: ChatFunctions,
  ): Promise<Tokenized> {
    let history: unknown
    try {
      history = chatHistoryOf(messages)
    } catch (error) {
      if (error instanceof NeuronError)
        throw new GatewayError(400, 'invalid_request_error', 'invalid_value', error.message, 'messages')
      throw error
    }
    return this.ask({ op: 'chat', history, functions, limit })
  }

  async terminate(): Promise<void> {
    await this.worker.terminate()
  }

  private ask(
    message: (
      | { op: 'encode'; text: string }
      | { op: 'chat'; history: unknown; functions: ChatFunctions | undefined }
    ) & { limit: number },
  ): Promise<Tokenized> {
    if (this.failed !== undefined) return Promise.reject(this.failed)
    const id = this.nextId++
    return new Promise<Tokenized>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject })
      this.worker.postMessage({ id, ...message })
    }).catch((error: unknown) => {
      throw error instanceof GatewayError
        ? error
        : new GatewayError(500, 'server_error', 'tokenizer_failed', `tokenizing for ${this.modelId} failed: ${error}`)
    })
  }
}
