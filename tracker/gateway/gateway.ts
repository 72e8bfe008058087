import type { IncomingMessage, ServerResponse } from 'node:http'
import { AdminEndpoints } from './admin'
import { AnthropicEndpoints, anthropicDialect } from './anthropic'
import { Dashboards } from './dashboards'
import type { GatewayDeps, GatewayOptions } from './deps'
import { type ErrorDialect, openAiDialect } from './dialects'
import { fromNeuronError, GatewayError } from './errors'
import { PaidGenerations } from './generation'
import { HiddenStatesEndpoint } from './hidden-states'
import { sendJson } from './http'
import { OllamaEndpoints, ollamaDialect } from './ollama'
import { OpenAiEndpoints } from './openai'
import { PromptTokenizers } from './prompt-tokenizers'
import { RateLimit } from './rate-limit'
import { TranslatedGenerations } from './translated-generations'

/**
 * The OpenAI-compatible front door on the tracker's HTTP port: /v1/models, /v1/chat/completions,
 * /v1/completions (streamed as SSE or not); Ollama's /api/chat, /api/generate, /api/tags, /api/show,
 * /api/version and Anthropic's /v1/messages, translated into the same generations; account
 * administration and dashboard queries. Every
 * generation runs on the swarm through the tracker's own SwarmClient and is paid from the
 * caller's account by the hops' signed receipts, as they arrive.
 */
export class Gateway {
  private readonly openai: OpenAiEndpoints
  private readonly ollama: OllamaEndpoints
  private readonly anthropic: AnthropicEndpoints
  private readonly dashboards: Dashboards
  private readonly admin: AdminEndpoints
  private readonly tokenizers: PromptTokenizers
  private readonly hiddenStates: HiddenStatesEndpoint

  constructor(
    private readonly deps: GatewayDeps,
    options: GatewayOptions,
  ) {
    const generations = new PaidGenerations(
      deps,
      options.pricing ?? {},
      deps.holds,
      options.stallMs,
      options.sharedPrefixes ?? process.env.NEURON_SHARED_PREFIXES === '1',
    )
    this.tokenizers = new PromptTokenizers(deps.catalog)
    // one limit per account, whichever API it calls
    const rateLimit = new RateLimit(options.requestsPerMinute ?? 120, deps.counter)
    this.openai = new OpenAiEndpoints(deps, options, generations, rateLimit, this.tokenizers)
    const translated = new TranslatedGenerations(deps, generations, rateLimit, this.tokenizers)
    this.ollama = new OllamaEndpoints(deps, translated)
    this.anthropic = new AnthropicEndpoints(translated)
    this.hiddenStates = new HiddenStatesEndpoint(deps, options.pricing ?? {}, rateLimit, this.tokenizers)
    this.dashboards = new Dashboards(deps)
    this.admin = new AdminEndpoints(deps.accounts, options.adminToken)
  }

  /** Serves the request when its path is the gateway's; false when it is someone else's. */
  handles(path: string): boolean {
    return path.startsWith('/v1/') || path.startsWith('/admin/') || path.startsWith('/api/')
  }

  /** Stops the prompt tokenizers' worker threads. */
  close(): Promise<void> {
    return this.tokenizers.close()
  }

  async handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    const dialect: ErrorDialect = path.startsWith('/api/')
      ? ollamaDialect
      : path === '/v1/messages'
        ? anthropicDialect
        : openAiDialect
    try {
      const method = req.method ?? 'GET'
      if (method === 'POST' && path === '/v1/messages') return await this.anthropic.messages(req, res)
      if (method === 'POST' && path === '/api/chat') return await this.ollama.chat(req, res)
      if (method === 'POST' && path === '/api/generate') return await this.ollama.generate(req, res)
      if (method === 'GET' && path === '/api/tags') return await this.ollama.tags(req, res)
      if (method === 'POST' && path === '/api/show') return await this.ollama.show(req, res)
      if ((method === 'GET' || method === 'HEAD') && path === '/api/version') return this.ollama.version(res)
      if (method === 'GET' && path === '/v1/models') return await this.openai.models(req, res)
      if (method === 'POST' && path === '/v1/chat/completions') return await this.openai.chat(req, res)
      if (method === 'POST' && path === '/v1/completions') return await this.openai.completion(req, res)
      if (method === 'POST' && path === '/v1/hidden_states') return await this.hiddenStates.handle(req, res)
      if (method === 'GET' && path === '/v1/dashboard/account') return await this.dashboards.account(req, res)
      const host = /^\/v1\/dashboard\/hosts\/([0-9a-f]{20})$/.exec(path)
      if (method === 'GET' && host !== null) return await this.dashboards.host(req, res, host[1] as string)
      if (method === 'POST' && path === '/admin/accounts') return await this.admin.createAccount(req, res)
      const grant = /^\/admin\/accounts\/(acct_[0-9a-f]{16})\/grant$/.exec(path)
      if (method === 'POST' && grant !== null) return await this.admin.grant(req, res, grant[1] as string)
      throw new GatewayError(
        404,
        'invalid_request_error',
        'unknown_url',
        `no route ${method} ${path}; see /v1/models, /v1/chat/completions, /v1/completions, /v1/messages, ` +
          `/api/chat, /api/generate, /api/tags, /api/show, /api/version.`,
      )
    } catch (error) {
      const e = fromNeuronError(error)
      if (e.status >= 500) this.deps.log(`gateway ${req.method} ${path}: ${e.message}`)
      if (!res.headersSent) sendJson(res, e.status, dialect.body(e))
      else if (!res.writableEnded) dialect.endStream(res, e)
    }
  }
}
