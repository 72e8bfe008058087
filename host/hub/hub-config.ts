import { readFile } from 'node:fs/promises'
import { homedir } from 'node:os'
import { join } from 'node:path'
import { NeuronError } from '../../protocol'

/** Where the Hub is and who asks it: read from the environment the way huggingface_hub reads it. */
export interface HubConfig {
  /** Without a trailing slash: `https://huggingface.co` or a mirror's address. */
  readonly endpoint: string
  /** A user access token, sent only to the endpoint's own origin (never to the CDN it redirects to). */
  readonly token?: string
}

export const DEFAULT_HUB_ENDPOINT = 'https://huggingface.co'

/**
 * HF_ENDPOINT (a mirror), then the token: HF_TOKEN, then HUGGING_FACE_HUB_TOKEN (older name), then the file
 * `huggingface-cli login` writes (HF_TOKEN_PATH, else $HF_HOME/token, else ~/.cache/huggingface/token).
 */
export async function hubConfigFromEnv(env: NodeJS.ProcessEnv = process.env): Promise<HubConfig> {
  const endpoint = hubEndpoint(env.HF_ENDPOINT)
  const fromEnv = (env.HF_TOKEN ?? env.HUGGING_FACE_HUB_TOKEN)?.trim()
  if (fromEnv) return { endpoint, token: fromEnv }
  const home = env.HF_HOME ?? join(env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'huggingface')
  const saved = await readFile(env.HF_TOKEN_PATH ?? join(home, 'token'), 'utf8').catch(() => '')
  return saved.trim() ? { endpoint, token: saved.trim() } : { endpoint }
}

/** Checks an endpoint given by a person: http(s), no credentials, no query; trailing slashes dropped. */
export function hubEndpoint(given: string | undefined): string {
  if (given === undefined || given.trim() === '') return DEFAULT_HUB_ENDPOINT
  let url: URL
  try {
    url = new URL(given.trim())
  } catch {
    throw new NeuronError(
      'bad_option',
      `HF_ENDPOINT ${JSON.stringify(given)} is not a URL; use e.g. https://hf-mirror.com`,
    )
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.username || url.password || url.search) {
    throw new NeuronError(
      'bad_option',
      `HF_ENDPOINT ${JSON.stringify(given)} must be a plain http(s) address without credentials or a query`,
    )
  }
  return url.href.replace(/\/+$/, '')
}
