import type { TlsCertificate } from '../dataplane/tls-trust'
import type { BlockRange } from '../protocol'
import type { RelayForOthers } from './network/relaying'

/** How a Host is set up: the CLI's flags, the app's settings, a test's. */
export interface HostOptions {
  /** The tracker; several instances of one swarm as a comma-separated list, joined in turn when one goes away. */
  readonly trackerUrl: string
  /** Keys, hardware cache and artifacts live here. */
  readonly dataDir: string
  readonly modelId?: string
  /** Blocks [a, b) to serve, or 'auto' to take the tracker's placement. */
  readonly blocks?: BlockRange | 'auto'
  readonly threads: number
  readonly maxSessions?: number
  /** KV-cache capacity per session, tokens: advertised to the tracker and enforced on every open. */
  readonly maxSessionTokens?: number
  /** A session opened and never stepped is closed after this long (default 30 s). */
  readonly unsteppedSessionMs?: number
  /** A stepped session idle this long is closed and its cache freed (default 10 min; its rent runs until then). */
  readonly idleSessionMs?: number
  /** A prompt's rows per step of the batch while others decode (default 64, at most 64; 0: prompts run whole). */
  readonly prefillChunkTokens?: number
  readonly quotaBytes?: number
  /** BitTorrent TCP port artifacts are fetched and seeded on (default: a free one). */
  readonly torrentPort?: number
  /** Address that port binds to (default: every interface, so hosts elsewhere can fetch from this one). */
  readonly torrentHost?: string
  /** 'cpu' keeps the layers off the GPUs (the user's choice); 'auto' (default) uses a detected GPU. */
  readonly device?: 'auto' | 'cpu'
  /** Accept no connections: clients reach this host through a relay (a volunteer's, else the tracker's). */
  readonly relay?: boolean
  /**
   * Relay for hosts nobody can reach, bounded (--relay-for-others);
   * used only where the tracker proved a public endpoint.
   */
  readonly relayForOthers?: RelayForOthers
  /**
   * The data plane's address: default every interface ('0.0.0.0'), or 127.0.0.1 when the tracker is on this computer's
   * loopback (a swarm on one machine). The tracker dials back each address the host offers before routing to it.
   */
  readonly listenHost?: string
  /** The data plane's port (default: a free one). */
  readonly listenPort?: number
  /** An endpoint to offer besides the host's own addresses: a port forward or proxy in front of it. */
  readonly advertise?: (listening: string) => string | Promise<string>
  /**
   * Serve the data plane over wss:// with this certificate instead of the host's own (which it makes once in the data
   * dir). Either way clients pin the certificate whose fingerprint the host signs. A host on loopback serves ws://.
   */
  readonly tls?: TlsCertificate
  /**
   * Ask the home router (UPnP-IGD, NAT-PMP) to forward the data-plane and BitTorrent ports (default: when listening on
   * every interface behind one).
   */
  readonly portMapping?: boolean
  readonly log?: (line: string) => void
}
