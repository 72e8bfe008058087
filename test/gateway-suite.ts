// The OpenAI-compatible gateway's suites (tracker/gateway/gateway*.test.ts): a real swarm on stories260K with the
// gateway on, an account made through the admin route, and the official `openai` client for it.
import OpenAI from 'openai'
import { STORIES_260K } from './models'
import { createAccount, type InProcessSwarm, startSwarm } from './programs'
import type { StoreEngine } from './store-engines'

export const GATEWAY_ADMIN = 'admin-token-for-tests'

export const MESSAGES = [
  { role: 'system' as const, content: 'You tell short stories.' },
  { role: 'user' as const, content: 'Once upon a time' },
]

export interface GatewaySuite {
  readonly swarm: InProcessSwarm
  readonly apiKey: string
  readonly accountId: string
  readonly openai: OpenAI
}

/** Three hosts over stories260K's five blocks on `engine`'s store; the gateway allows 40 requests a minute. */
export async function startGatewaySuite(dir: string, engine: StoreEngine): Promise<GatewaySuite> {
  const swarm = await startSwarm(
    dir,
    STORIES_260K,
    [
      [0, 2],
      [2, 4],
      [4, 5],
    ],
    { gateway: { adminToken: GATEWAY_ADMIN, requestsPerMinute: 40 }, dbPath: (await engine.fresh()).location },
  )
  const { apiKey, accountId } = await createAccount(swarm.tracker.url, GATEWAY_ADMIN, { name: 'tests' })
  const openai = new OpenAI({ apiKey, baseURL: `${swarm.tracker.url}/v1`, maxRetries: 0 })
  return { swarm, apiKey, accountId, openai }
}

/** A request to the gateway at `url` as it travels; `init.key` its bearer token (default `apiKey`; null: none). */
export async function gatewayRequest(
  url: string,
  apiKey: string,
  path: string,
  init: RequestInit & { key?: string | null } = {},
) {
  const headers: Record<string, string> = { 'content-type': 'application/json' }
  const key = init.key === undefined ? apiKey : init.key
  if (key !== null) headers.authorization = `Bearer ${key}`
  const res = await fetch(`${url}${path}`, { ...init, headers })
  return {
    status: res.status,
    body: (await res.json()) as { error: { message: string; type: string; param: string | null; code: string | null } },
  }
}
