import { get as httpGet } from 'node:http'
import { get as httpsGet } from 'node:https'
import { io, type Socket } from 'socket.io-client'
import type { NodeIdentity } from '../identity/keys'
import { AuthChallenge, NeuronError, NODE_AUTH_HEADER, type RpcSocket } from '../protocol'
import { caOption, type TrustedCa } from './tls-trust'

export type TrackerNamespace = '/hosts' | '/clients'

/** A tracker URL as it is kept, compared and joined to paths: without trailing slashes. */
export function trackerBase(url: string): string {
  return url.replace(/\/+$/, '')
}

/**
 * A tracker given as one URL, or as several instances of one swarm (a list, or comma-separated):
 * each kept as trackerBase keeps it. Empty entries are dropped; none at all is a typed error.
 */
export function trackerUrls(urls: string | readonly string[]): string[] {
  const list = (typeof urls === 'string' ? urls.split(',') : urls)
    .map((u) => trackerBase(u.trim()))
    .filter((u) => u !== '')
  if (list.length === 0)
    throw new NeuronError(
      'bad_option',
      'no tracker URL given; pass one, or several instances of one swarm separated by commas.',
    )
  return list
}

export interface TrackerConnectionOptions {
  /** Certificates to trust for an https tracker besides the system's (see TrustedCa). */
  readonly ca?: TrustedCa
  /**
   * The tracker's public key, when known (saved from an earlier join, or given by its operator): a
   * tracker at this URL naming another key is refused, so a look-alike cannot collect a login for
   * another tracker. Without it, the key the tracker names is trusted on this join.
   */
  readonly trackerKey?: string
  readonly timeoutMs?: number
  /**
   * Audits a SwarmClient keeps in flight at once over all its sessions
   * (default MAX_AUDITS_IN_FLIGHT, the tracker's cap per key).
   */
  readonly auditsInFlight?: number
  /**
   * Whether a SwarmClient punches a channel through the routers to a host that accepts no connections before it falls
   * back to a relay (dataplane/punched-paths.ts); default true, false with NEURON_PUNCH=0 (relay tests and benches).
   */
  readonly punch?: boolean
}

/** An authenticated connection to a tracker, with the key the tracker proved it signs with. */
export type TrackerSocket = Socket & RpcSocket & { readonly trackerKey: string }

/** GET /auth/challenge: a fresh nonce and the tracker's key; refused when the key is not the expected one. */
export async function fetchChallenge(
  trackerUrl: string,
  options: TrackerConnectionOptions = {},
): Promise<AuthChallenge> {
  const base = trackerBase(trackerUrl)
  let challenge: AuthChallenge
  try {
    challenge = AuthChallenge.parse(await getJson(`${base}/auth/challenge`, options.ca, options.timeoutMs ?? 10_000))
  } catch (cause) {
    throw new NeuronError(
      'tracker_unreachable',
      `cannot reach the tracker at ${base} (${cause instanceof Error ? cause.message : cause}); check the URL and ` +
        `that it is running.`,
      { trackerUrl: base },
    )
  }
  if (options.trackerKey !== undefined && challenge.tracker !== options.trackerKey) {
    throw new NeuronError(
      'wrong_tracker',
      `the tracker at ${base} signs with key ${challenge.tracker.slice(0, 8)}…, not the expected ` +
        `${options.trackerKey.slice(0, 8)}…; it may be another tracker posing as it. Check the URL, or ask its ` +
        `operator whether the key changed.`,
      { trackerUrl: base, trackerKey: challenge.tracker },
    )
  }
  return challenge
}

/**
 * Headers proving `identity`'s key to a tracker's HTTP route (the dashboards of a private swarm):
 * a fresh challenge answered for `scope`, usable once.
 */
export async function nodeAuthHeaders(
  trackerUrl: string,
  identity: NodeIdentity,
  scope: string,
  options: TrackerConnectionOptions = {},
): Promise<Record<string, string>> {
  const { publicKey, nonce, signature } = identity.answer(scope, await fetchChallenge(trackerUrl, options))
  return { [NODE_AUTH_HEADER]: `${publicKey}.${nonce}.${signature}` }
}

/**
 * Opens an authenticated Socket.IO connection to a tracker: fetches a challenge over HTTP(S), signs
 * it (naming the tracker's key) with this node's key, and presents the signature in the handshake.
 */
export async function connectTracker(
  trackerUrl: string,
  namespace: TrackerNamespace,
  identity: NodeIdentity,
  options: TrackerConnectionOptions = {},
): Promise<TrackerSocket> {
  const base = trackerBase(trackerUrl)
  const timeoutMs = options.timeoutMs ?? 10_000
  const challenge = await fetchChallenge(base, options)
  const socket = io(`${base}${namespace}`, {
    auth: identity.answer(namespace, challenge),
    transports: ['websocket'],
    reconnection: false,
    timeout: timeoutMs,
    // Its own connection: socket.io-client would otherwise carry another namespace's socket to the same
    // tracker (a host's and a client's in one process) on one engine, with the first one's options, and
    // a connection the tracker drops for one would drop both.
    forceNew: true,
    ...caOption(options.ca),
  })
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve())
    socket.once('connect_error', (error: Error & { data?: { code?: string } }) => {
      socket.close()
      reject(
        new NeuronError(
          error.data?.code ?? 'tracker_unreachable',
          `tracker ${base} refused the connection: ${error.message}`,
          { trackerUrl: base },
        ),
      )
    })
  })
  return Object.assign(socket as Socket & RpcSocket, { trackerKey: challenge.tracker })
}

/**
 * Connects to the first of `urls` that answers, trying them in turn from `from` (wrapping around).
 * Every instance of one swarm signs with the same key: once one is known, another naming a different
 * key is refused like any look-alike.
 */
export async function connectAnyTracker(
  urls: readonly string[],
  namespace: TrackerNamespace,
  identity: NodeIdentity,
  options: TrackerConnectionOptions = {},
  from = 0,
): Promise<{ socket: TrackerSocket; index: number }> {
  const failures: unknown[] = []
  for (let i = 0; i < urls.length; i++) {
    const index = (from + i) % urls.length
    try {
      return { socket: await connectTracker(urls[index] as string, namespace, identity, options), index }
    } catch (error) {
      // A tracker that answers with the wrong key is not one of ours: said at once, not hidden behind the next URL.
      if (error instanceof NeuronError && error.code === 'wrong_tracker') throw error
      failures.push(error)
    }
  }
  if (failures.length === 1) throw failures[0]
  throw new NeuronError(
    'tracker_unreachable',
    `none of the ${urls.length} tracker instances answered: ` +
      `${failures.map((f) => (f instanceof Error ? f.message : String(f))).join('; ')}`,
    { trackerUrls: urls.join(',') },
  )
}

/** A small JSON answer over http or https (with `ca` trusted); Node's fetch cannot take a CA without undici. */
function getJson(url: string, ca: TrustedCa | undefined, timeoutMs: number): Promise<unknown> {
  const secure = url.startsWith('https:')
  return new Promise((resolve, reject) => {
    const options = { signal: AbortSignal.timeout(timeoutMs), ...(secure ? caOption(ca) : {}) }
    const req = (secure ? httpsGet : httpGet)(url, options, (res) => {
      if (res.statusCode !== 200) {
        res.resume()
        reject(new Error(`HTTP ${res.statusCode}`))
        return
      }
      const chunks: Buffer[] = []
      let size = 0
      res.on('data', (chunk: Buffer) => {
        size += chunk.length
        // A challenge is under 200 bytes: anything near this is not a tracker.
        if (size > 64 * 1024) req.destroy(new Error('the challenge is larger than 64 KiB'))
        else chunks.push(chunk)
      })
      res.on('end', () => {
        try {
          resolve(JSON.parse(Buffer.concat(chunks).toString('utf8')))
        } catch (error) {
          reject(error)
        }
      })
      res.on('error', reject)
    })
    req.on('error', reject)
  })
}
