import { NeuronError } from '../../protocol'
import type { HubConfig } from './hub-config'

/** What a request is about, so that a refusal can name it. */
export interface HubTarget {
  readonly repo: string
  readonly file?: string
  readonly revision?: string
}

const MAX_REDIRECTS = 5

/**
 * One GET to the Hub, redirects followed by hand: the token goes to the endpoint's own origin only (the CDN a file
 * redirects to gets a signed URL, and must not get the token), and only http(s) targets are followed. A refusal
 * becomes a NeuronError that names the repository or file and says what to do.
 */
export async function hubGet(
  config: HubConfig,
  url: string,
  target: HubTarget,
  options: { readonly headers?: Record<string, string>; readonly signal?: AbortSignal } = {},
): Promise<Response> {
  const origin = new URL(config.endpoint).origin
  let current = new URL(url)
  for (let hop = 0; ; hop++) {
    const headers: Record<string, string> = { 'user-agent': 'neuron/0.1; hf-compatible', ...options.headers }
    if (config.token !== undefined && current.origin === origin) headers.authorization = `Bearer ${config.token}`
    let response: Response
    try {
      response = await fetch(current, {
        headers,
        redirect: 'manual',
        ...(options.signal ? { signal: options.signal } : {}),
      })
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error)
      throw new NeuronError(
        'hub_unreachable',
        `could not reach ${current.origin} (${cause}); check the connection, or set HF_ENDPOINT to a mirror`,
        { url: current.origin },
      )
    }
    if (response.status >= 300 && response.status < 400 && response.headers.has('location')) {
      await response.body?.cancel()
      const next = new URL(response.headers.get('location') ?? '', current)
      if (hop >= MAX_REDIRECTS || (next.protocol !== 'https:' && next.protocol !== 'http:')) {
        throw new NeuronError(
          'hub_bad_answer',
          `${config.endpoint} redirected ${describe(target)} too often or to ${next.protocol}`,
        )
      }
      current = next
      continue
    }
    if (response.ok) return response
    await response.body?.cancel()
    throw refusal(response, config, target)
  }
}

function describe(target: HubTarget): string {
  return target.file === undefined ? target.repo : `${target.repo}/${target.file}`
}

/** The Hub's refusal in words: it names its reason in X-Error-Code (RepoNotFound, EntryNotFound, GatedRepo…). */
export function refusal(response: Response, config: HubConfig, target: HubTarget): NeuronError {
  const code = response.headers.get('x-error-code') ?? ''
  const said = (response.headers.get('x-error-message') ?? '').slice(0, 200)
  const page = `${config.endpoint}/${target.repo}`
  const details = { status: response.status, repo: target.repo, ...(target.file ? { file: target.file } : {}) }
  const setToken = 'set HF_TOKEN to a Hugging Face access token that can read it'
  if (code === 'GatedRepo' || (response.status === 403 && config.token !== undefined)) {
    return new NeuronError(
      'hub_gated',
      config.token === undefined
        ? `${target.repo} is gated: ${setToken}, after accepting its terms at ${page}`
        : `${target.repo} is gated and your HF_TOKEN has no access yet: accept its terms at ${page} with that account`,
      details,
    )
  }
  if (response.status === 401 || response.status === 403) {
    // Without a token the Hub answers 401 for a private repository and for one that does not exist alike.
    return new NeuronError(
      config.token === undefined ? 'hub_gated' : 'hub_token_refused',
      config.token === undefined
        ? `${target.repo} was not found on ${config.endpoint}, or it is private or gated: ` +
            'check the name (owner/name); ' +
            `for a private or gated model ${setToken}`
        : `the Hub refused your HF_TOKEN for ${target.repo}${said ? ` (${said})` : ''}: check the token at ` +
            `https://huggingface.co/settings/tokens and that it can read this repository`,
      details,
    )
  }
  if (response.status === 404) {
    if (code === 'EntryNotFound' && target.file !== undefined) {
      return new NeuronError(
        'hub_not_found',
        `${target.repo} has no file ${target.file}; list its files at ${page}`,
        details,
      )
    }
    if (code === 'RevisionNotFound') {
      return new NeuronError('hub_not_found', `${target.repo} has no revision ${target.revision ?? ''}`, details)
    }
    return new NeuronError(
      'hub_not_found',
      target.file === undefined || code === 'RepoNotFound'
        ? `no model ${target.repo} on ${config.endpoint}; check the name (owner/name)`
        : `${target.repo} has no file ${target.file}; list its files at ${page}`,
      details,
    )
  }
  if (response.status === 429) {
    return new NeuronError('hub_busy', `${config.endpoint} asks to slow down (429); try again in a minute`, details)
  }
  return new NeuronError(
    'hub_unavailable',
    `${config.endpoint} answered ${response.status} for ${describe(target)}` +
      `${said ? ` (${said})` : ''}; try again later`,
    details,
  )
}

/** Reads a JSON answer of at most `limit` bytes: a Hub (or a mirror) that sends more is refused, not buffered. */
export async function boundedJson(response: Response, limit: number, what: string): Promise<unknown> {
  const declared = Number(response.headers.get('content-length') ?? Number.NaN)
  if (declared > limit) {
    await response.body?.cancel()
    throw new NeuronError('hub_bad_answer', `${what}: the answer is ${declared} bytes, above the ${limit} read`)
  }
  const reader = response.body?.getReader()
  const chunks: Uint8Array[] = []
  let size = 0
  for (;;) {
    const next = reader === undefined ? { done: true as const } : await reader.read()
    if (next.done) break
    size += next.value.byteLength
    if (size > limit) {
      await reader?.cancel()
      throw new NeuronError('hub_bad_answer', `${what}: the answer passed ${limit} bytes; is HF_ENDPOINT a Hub?`)
    }
    chunks.push(next.value)
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'))
  } catch {
    throw new NeuronError('hub_bad_answer', `${what}: the answer is not JSON; is HF_ENDPOINT a Hub?`)
  }
}
