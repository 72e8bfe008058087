import { randomBytes } from 'node:crypto'
/**
 * Round trips from this client to hosts, by WebSocket ping: the swarm client relays every hop itself, so
 * these are the links a session waits on. A ping measures the network alone (no compute, nothing the host
 * reports about itself), and hosts answer it without a session or a ticket.
 */
import type WebSocket from 'ws'
import {
  ClientToTracker,
  callRpc,
  type LatencyReport,
  MAX_LATENCY_LINKS,
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
        const pinger = new Pinger(socket)
        const samples: number[] = []
        for (let i = 0; i < PINGS_PER_TARGET; i++) {
          const ms = await pinger.ping(PING_TIMEOUT_MS)
          if (ms !== undefined) samples.push(ms)
        }
        if (samples.length > 0) measured.set(hostId, samples)
      } finally {
        socket.on('error', () => {})
        socket.terminate()
      }
    }),
  )
  return measured
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
