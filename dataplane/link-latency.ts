import { randomBytes } from 'node:crypto'
/**
 * Round trips from this client to hosts: the swarm client relays every hop itself, so these are the links a session
 * waits on. A direct link is measured by WebSocket ping; a host behind a relay (the tracker's, a volunteer's) by a
 * ping frame the host answers with a pong at once, so the round trip counts the relay as the session's frames do.
 * A ping measures the network alone (no compute, nothing the host reports about itself), and hosts answer it
 * without a session or a ticket.
 */
import type WebSocket from 'ws'
import {
  ClientToTracker,
  callRpc,
  decodeFrame,
  encodeFrame,
  type Frame,
  type LatencyReport,
  MAX_LATENCY_LINKS,
  NO_SESSION,
  type Route,
  type RpcSocket,
} from '../protocol'
import { dataPlaneSocket, type TrustedCa } from './tls-trust'

/** A ping unanswered this long is not counted (the link is reported by the hops' failures instead), ms. */
export const PING_TIMEOUT_MS = 5000
/** Pings per host the tracker asks to be measured. */
const PINGS_PER_TARGET = 3

/** Pings on one open socket, one at a time. */
export class Pinger {
  private serial = 0

  constructor(private readonly socket: WebSocket) {}

  /** The round trip of one ping, ms, or undefined when no pong came within `timeoutMs` or the socket closed. */
  ping(timeoutMs: number): Promise<number | undefined> {
    // unguessable: a host that could predict it would answer the pong before the ping arrives and look near
    const payload = Buffer.concat([Buffer.from(`neuron-ping-${++this.serial}-`), randomBytes(16)])
    return new Promise((resolve) => {
      const started = performance.now()
      const done = (ms: number | undefined) => {
        clearTimeout(timer)
        this.socket.off('pong', onPong)
        this.socket.off('close', onClose)
        resolve(ms)
      }
      const onPong = (data: Buffer) => {
        if (data.equals(payload)) done(performance.now() - started)
      }
      const onClose = () => done(undefined)
      const timer = setTimeout(() => done(undefined), timeoutMs)
      this.socket.on('pong', onPong)
      this.socket.on('close', onClose)
      try {
        this.socket.ping(payload)
      } catch {
        done(undefined)
      }
    })
  }
}

/**
 * Pings a host by frame over whatever carries its frames (`exchange`: a relay's RPC, a circuit): the host answers a
 * ping frame with a pong of the same step and payload (shard-server.ts), so the round trip is the path's, relay
 * included. Step and payload are random: nobody on the path can answer before the ping has reached the host.
 */
export class FramePinger {
  constructor(private readonly exchange: (frame: Uint8Array) => Promise<Frame>) {}

  /** The round trip of one ping, ms, or undefined when no matching pong came within `timeoutMs`. */
  async ping(timeoutMs: number): Promise<number | undefined> {
    const payload = randomBytes(16)
    const step = payload.readUInt32LE(0)
    const frame = encodeFrame({
      ...{ kind: 'ping', dtype: 'json', flags: 0, session: NO_SESSION, step },
      ...{ position: 0, tokens: 0, width: 0, payload },
    })
    const started = performance.now()
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<undefined>((resolve) => {
      timer = setTimeout(() => resolve(undefined), timeoutMs)
    })
    try {
      const answer = await Promise.race([this.exchange(frame), late])
      if (answer === undefined) return undefined
      const ok = answer.kind === 'pong' && answer.step === step && Buffer.from(answer.payload).equals(payload)
      return ok ? performance.now() - started : undefined
    } catch {
      return undefined // an error frame (a host that answers no pings), a lost relay: not measured
    } finally {
      clearTimeout(timer)
    }
  }
}

/** Pings `pinger` PINGS_PER_TARGET times, one after another; the round trips that came back. */
async function samples(pinger: { ping(timeoutMs: number): Promise<number | undefined> }): Promise<number[]> {
  const out: number[] = []
  for (let i = 0; i < PINGS_PER_TARGET; i++) {
    const ms = await pinger.ping(PING_TIMEOUT_MS)
    if (ms !== undefined) out.push(ms)
  }
  return out
}

/**
 * Round trips through the tracker's relay to hosts that take no connections (the route's `measureRelayed`): each a
 * few ping frames, carried as a step's frames are. Hosts that do not answer are left out.
 */
export async function measureRelayed(tracker: RpcSocket, hostIds: readonly string[]): Promise<Map<string, number[]>> {
  const measured = new Map<string, number[]>()
  await Promise.all(
    hostIds.map(async (hostId) => {
      const relayed = async (frame: Uint8Array) =>
        decodeFrame(
          (await callRpc(tracker, ClientToTracker, 'relay.forward', { hostId, frame }, PING_TIMEOUT_MS)).frame,
        )
      const found = await samples(new FramePinger(relayed))
      if (found.length > 0) measured.set(hostId, found)
    }),
  )
  return measured
}

/**
 * Connects to each host the tracker named, pings it a few times and hangs up; hosts that do not answer are left out.
 */
export async function measureHosts(
  targets: NonNullable<Route['measure']>,
  ca: TrustedCa | undefined,
): Promise<Map<string, number[]>> {
  const measured = new Map<string, number[]>()
  await Promise.all(
    targets.map(async ({ hostId, endpoint, fingerprint }) => {
      let socket: WebSocket
      try {
        socket = dataPlaneSocket(endpoint, { fingerprint, ca })
      } catch {
        return // an endpoint ws cannot dial is the host's problem, found when it is routed
      }
      try {
        const opened = await new Promise<boolean>((resolve) => {
          const timer = setTimeout(() => resolve(false), PING_TIMEOUT_MS)
          socket.once('open', () => resolve(true))
          socket.once('error', () => resolve(false))
          socket.once('open', () => clearTimeout(timer))
        })
        if (!opened) return
        const found = await samples(new Pinger(socket))
        if (found.length > 0) measured.set(hostId, found)
      } finally {
        socket.on('error', () => {})
        socket.terminate()
      }
    }),
  )
  return measured
}

/** A channel that carries frames to one host and its answers back (a punched path, punched-link.ts). */
interface FramePath {
  readonly hostId: string
  exchange(frame: Uint8Array, timeoutMs: number): Promise<Frame>
}

/**
 * The hosts a route asked its client to measure: directly where they take connections; else over a channel punched to
 * them (`punched`: the client's punched paths), which is how the client would reach them; else through the relay.
 */
export async function measureAsked(
  route: Pick<Route, 'measure' | 'measureRelayed'>,
  ca: TrustedCa | undefined,
  tracker: RpcSocket,
  punched?: (hostId: string) => Promise<FramePath | undefined>,
): Promise<Map<string, number[]>> {
  const behind = route.measureRelayed ?? []
  const paths = await Promise.all(behind.map((hostId) => punched?.(hostId)))
  const overPunched = async () => {
    const measured = new Map<string, number[]>()
    for (const path of paths) {
      if (path === undefined) continue
      const found = await samples(new FramePinger((frame) => path.exchange(frame, PING_TIMEOUT_MS)))
      if (found.length > 0) measured.set(path.hostId, found)
    }
    return measured
  }
  const [direct, punchedTo, relayed] = await Promise.all([
    measureHosts(route.measure ?? [], ca),
    overPunched(),
    measureRelayed(
      tracker,
      behind.filter((_, i) => paths[i] === undefined),
    ),
  ])
  return new Map([...direct, ...punchedTo, ...relayed])
}

/** Sends the round trips measured in one session to the tracker (best effort: routing works without them). */
export function reportLatencies(
  tracker: RpcSocket,
  hops: Iterable<{ hostId: string; roundTripsMs: readonly number[] | undefined }>,
  probed: Map<string, number[]>,
  log: (line: string) => void,
): void {
  const links: LatencyReport['links'] = []
  for (const { hostId, roundTripsMs } of hops)
    if (roundTripsMs !== undefined && roundTripsMs.length > 0) links.push({ hostId, roundTripMs: [...roundTripsMs] })
  for (const [hostId, roundTripMs] of probed) links.push({ hostId, roundTripMs })
  if (links.length === 0) return
  callRpc(tracker, ClientToTracker, 'latency.report', { links: links.slice(0, MAX_LATENCY_LINKS) }).catch((e: Error) =>
    log(`latency.report: ${e.message}`),
  )
}

/** The middle of `xs` (the upper one of an even count), 0 for none. */
export function median(xs: readonly number[]): number {
  if (xs.length === 0) return 0
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)] ?? 0
}
