import type { TlsCertificate } from '../dataplane/tls-trust'
import { NodeIdentity } from '../identity/keys'
import type { ChecksOptions } from './checks/host-checks'
import type { OwnRerunsFactory } from './checks/own-reruns'
import { isPostgresUrl } from './db/postgres-store'
import type { GatewayOptions } from './gateway/deps'
import type { LatencyMatrixOptions } from './routing/measured-latencies'
import type { TicketOfficeOptions } from './tickets/ticket-office'

/** How a tracker is set up: `neuron tracker`'s flags, a hosted deployment's NEURON_TRACKER_* variables, or a test's. */
export interface TrackerOptions extends TicketOfficeOptions {
  /** 0 picks a free port. */
  readonly port?: number
  readonly host?: string
  /**
   * The UDP port of the tracker's STUN server on `host` (tracker/reachability/stun-server.ts): a host behind a home
   * router learns there the address and port its router gave it, for hole punching. 0 or absent picks a free UDP port
   * (hosts and clients ask for it: stun.port); null: the tracker answers no STUN, and nobody punches through it.
   * `neuron tracker` gives it the HTTP port's number.
   */
  readonly stunPort?: number | null
  /** SQLite file (':memory:' for a throwaway swarm), or a postgres:// URL (tracker/db/postgres-store.ts). */
  readonly dbPath: string
  /**
   * redis://…: this instance is one of several serving the swarm (tracker/cluster/); they share the
   * postgres:// store and meet here. Absent: this process is the whole tracker.
   */
  readonly redisUrl?: string
  /**
   * Where the tracker's key pair is kept (default
   * `<dbPath>.tracker-key.pem`; `tracker-key.pem` beside a postgres:// URL).
   */
  readonly keyPath?: string
  readonly heartbeatMs?: number
  /**
   * A private swarm admits only these public keys (base64url) and
   * its own, everywhere (see Admission); absent, anyone may join.
   */
  readonly allowedKeys?: readonly string[]
  /** Known-answer probes, audits and probation (see HostChecks); defaults suit a public swarm. */
  readonly checks?: ChecksOptions
  /**
   * Re-run blocks no second host serves here, for audits (tracker/checks/own-reruns.ts): a sole host lying the same
   * way to every key is caught only so. `neuron tracker --rerun-dir` hands host/reference-reruns.ts in.
   */
  readonly ownReruns?: OwnRerunsFactory
  /** Serve https:// and wss:// (Socket.IO) with this certificate; it must name `host`, as clients check it. */
  readonly tls?: TlsCertificate
  /** Largest Socket.IO message (relayed frames included), bytes. */
  readonly maxMessageBytes?: number
  readonly log?: (line: string) => void
  /**
   * Logs every planned route: its hops, how each is reached, the
   * expected ms per token (`--log-routes`; for diagnosing routing).
   */
  readonly logRoutes?: boolean
  /** The OpenAI-compatible gateway; its admin token defaults to $NEURON_ADMIN_TOKEN. */
  readonly gateway?: GatewayOptions
  /**
   * How measured client-to-host latencies are kept and trusted
   * (tracker/routing/measured-latencies.ts); defaults suit a public swarm.
   */
  readonly latency?: Partial<LatencyMatrixOptions>
  /** Micro-credits a new account starts with (default $NEURON_STARTING_GRANT_MICRO, else 10 credits). */
  readonly startingGrantMicro?: number
  /**
   * The tracker's own key: it signs tickets and names the tracker in login challenges. Default: kept
   * in `keyPath` (a fresh one for ':memory:').
   */
  readonly identity?: NodeIdentity
  /**
   * How long host earnings stay pending (voidable) before they are
   * settled (default $NEURON_SETTLEMENT_WINDOW_MS, else 24 h).
   */
  readonly settlementWindowMs?: number
}

/**
 * The tracker's key pair: given, a throwaway one for a throwaway in-memory swarm, or the key file (created if absent).
 */
export async function trackerIdentity(options: TrackerOptions): Promise<NodeIdentity> {
  if (options.identity !== undefined) return options.identity
  if (options.dbPath === ':memory:' && options.keyPath === undefined) return NodeIdentity.generate()
  return NodeIdentity.loadOrCreateFile(
    options.keyPath ?? (isPostgresUrl(options.dbPath) ? 'tracker-key.pem' : `${options.dbPath}.tracker-key.pem`),
  )
}
