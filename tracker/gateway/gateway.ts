import type { IncomingMessage, ServerResponse } from 'node:http'
import { AdminEndpoints } from './admin'
import { Dashboards } from './dashboards'
import type { GatewayDeps, GatewayOptions } from './deps'
import { fromNeuronError, GatewayError } from './errors'
import { PaidGenerations } from './generation'
import { HiddenStatesEndpoint } from './hidden-states'
import { sendError } from './http'
import { OpenAiEndpoints } from './openai'
import { PromptTokenizers } from './prompt-tokenizers'
import { RateLimit } from './rate-limit'
import { endSseWithError } from './sse'

/**
 * The OpenAI-compatible front door on the tracker's HTTP port: /v1/models, /v1/chat/completions,
 * /v1/completions (streamed as SSE or not), account administration and dashboard queries. Every
 * generation runs on the swarm through the tracker's own SwarmClient and is paid from the
 * caller's account by the hops' signed receipts, as they arrive.
 */
export class Gateway {
  private readonly openai: OpenAiEndpoints
  private readonly dashboards: Dashboards
  private readonly admin: AdminEndpoints
  private readonly tokenizers: PromptTokenizers
  private readonly hiddenStates: HiddenStatesEndpoint

  constructor(
    private readonly deps: GatewayDeps,
    options: GatewayOptions,
  ) {
    const generations = new PaidGenerations(deps, options.pricing ?? {}, deps.holds, options.stallMs)
    this.tokenizers = new PromptTokenizers(deps.catalog)
    // one limit per account across every endpoint
    const rateLimit = new RateLimit(options.requestsPerMinute ?? 120, deps.counter)
    this.openai = new OpenAiEndpoints(deps, options, generations, rateLimit, this.tokenizers)
    this.hiddenStates = new HiddenStatesEndpoint(deps, options.pricing ?? {}, rateLimit, this.tokenizers)
    this.dashboards = new Dashboards(deps)
    this.admin = new AdminEndpoints(deps.accounts, options.adminToken)
  }

  /** Serves the request when its path is the gateway's; false when it is someone else's. */
  handles(path: string): boolean {
    return path.startsWith('/v1/') || path.startsWith('/admin/')
  }

  /** Stops the prompt tokenizers' worker threads. */
  close(): Promise<void> {
    return this.tokenizers.close()
  }

  async handle(req: IncomingMessage, res: ServerResponse, path: string): Promise<void> {
    try {
      const method = req.method ?? 'GET'
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
      throw new GatewayError(404, 'invalid_request_error', 'unknown_url', `no route ${method} ${path}; see /v1/models, /v1/chat/completions, /v1/completions.`)
    } catch (error) {
      const e = fromNeuronError(error)
      if (e.status >= 500) this.deps.log(`gateway ${req.method} ${path}: ${e.message}`)
      if (!res.headersSent) sendError(res, e)
      else if (res.getHeader('content-type') === 'text/event-stream' && !res.writableEnded) endSseWithError(res, e)
      else res.end()
    }
  }
}
