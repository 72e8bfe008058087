// Spans the tracker re-runs itself, for audits of blocks no second host serves (item 4 of the trust work): a sole host
// that lies the same way to every key agrees with its own re-run, so only another run of the same blocks tells. The
// tracker does not run models itself (it imports neither host nor native): whoever starts it may hand it a way to, as
// `neuron tracker --rerun-dir` does with host/reference-reruns.ts, within a budget of bytes; small spans fit.
import type { HopLink } from '../../dataplane/hop-link'
import type { Manifest } from '../../protocol'

/** What the tracker hands the spans it re-runs: the model's files, where to fetch them, and whose tickets to take. */
export interface OwnRerunsContext {
  /** The model's manifest and torrent (ModelCatalog.files); throws for a model it does not know. */
  readonly files: (modelId: string) => { manifest: Manifest; torrent: Buffer }
  /** The swarm's BitTorrent announce URL: a span's artifacts come from the hosts that seed them. */
  readonly announceUrl: () => string | undefined
  /** The tracker's public key: a re-run's session opens with a ticket it signed, for `hostId`. */
  readonly trackerKey: string
  /** The id the tracker's re-runs go by (its own key's): never a registered host's. */
  readonly hostId: string
  readonly log: (line: string) => void
}

/** The spans the tracker re-runs itself. */
export interface OwnReruns {
  /**
   * Whether the tracker re-runs `blocks` of the model itself: they fit its budget (and are fetched and loaded from
   * the first ask, in the background). A route marks such a hop audited by the tracker.
   */
  serves(modelId: string, blocks: readonly [number, number]): boolean
  /** A link to the loaded span, in-process; undefined while it loads, or when it cannot be run here. */
  link(modelId: string, blocks: readonly [number, number]): HopLink | undefined
  close(): Promise<void>
}

/** Builds the tracker's own re-runs once it knows its key, catalog and address (TrackerOptions.ownReruns). */
export type OwnRerunsFactory = (context: OwnRerunsContext) => OwnReruns
