import { IdleLinks } from '../dataplane/idle-links'
import { PunchedPaths, type PunchSignalling } from '../dataplane/punched-paths'
import type { TrustedCa } from '../dataplane/tls-trust'
import { type TrackerConnectionOptions, trackerUrls } from '../dataplane/tracker-connection'
import { openTrackerChannel, type TrackerChannel } from '../dataplane/tracker-link'
import type { NodeIdentity } from '../identity/keys'
import { ClientToTracker, callRpc, type Receipt } from '../protocol'
import { checkTokenizer, ModelTokenizer } from '../text/tokenizer'
import { Conversation, type ConversationOptions } from './generation/conversation'
import { Generation, type GenerationClient } from './generation/generation'
import { PrefixBook } from './generation/prefix-book'
import type { GeneratedToken, GenerateRequest, GenerationSummary } from './generation/request'
import type { HopOpener } from './open-hops'
import { type AuditableHop, auditHops, limitAudits } from './step-audits'

export type { GeneratedToken, GenerateRequest, GenerationSummary, HopStats } from './generation/request'

/**
 * How long close() waits for the tracker to acknowledge the sessions it was told ended (it answers in milliseconds).
 */
export const END_SESSION_WAIT_MS = 5_000

/**
 * A client's front door to a swarm: its tracker connection and key, the models' tokenizers, and generations
 * (generation/), each a session it ends at the tracker when done; close() waits for those ends.
 */
export class SwarmClient {
  private readonly tokenizers = new Map<string, Promise<ModelTokenizer>>()
  /** session.end calls not yet acknowledged: close() waits for them. */
  private readonly ending = new Set<Promise<void>>()
  /** Audits of ended sessions still running (auditHops). */
  private readonly auditing = new Set<Promise<void>>()
  /** Hosts the audits found lying (banned at the tracker), not yet told by auditsSettled(). */
  private readonly liars: string[] = []
  /** Direct links to hosts of ended sessions, for the next session to the same host (dataplane/idle-links.ts). */
  private readonly idleLinks = new IdleLinks()
  private closed = false
  /** What this client's ended sessions' hops still hold, once reusePrefixes() turned it on (prefix-book.ts). */
  private prefixes: PrefixBook | undefined

  private constructor(
    readonly tracker: TrackerChannel,
    /** Signs each open with the key the tracker issued the tickets to. */
    private readonly identity: NodeIdentity,
    private readonly log: (line: string) => void,
    /** Certificates trusted for wss:// hosts besides the system's: those trusted for the tracker. */
    private readonly ca?: TrustedCa,
    /** Channels punched to hosts that accept no connections (absent: relays only). */
    private readonly punched?: PunchedPaths,
  ) {}

  /**
   * `trackerUrl`: one tracker, or several instances of one swarm (see
   * openTrackerChannel); `connection.ca` is trusted for hosts too.
   */
  static async connect(
    trackerUrl: string | readonly string[],
    identity: NodeIdentity,
    log: (line: string) => void = () => {},
    connection: TrackerConnectionOptions = {},
  ): Promise<SwarmClient> {
    const tracker = await openTrackerChannel(trackerUrl, '/clients', identity, connection, log)
    limitAudits(tracker, connection.auditsInFlight)
    const punch = connection.punch ?? process.env.NEURON_PUNCH !== '0'
    const punched = punch ? new PunchedPaths(signalling(tracker, trackerUrls(trackerUrl)[0] ?? ''), log) : undefined
    return new SwarmClient(tracker, identity, log, connection.ca, punched)
  }

  /** The model's tokenizer, used only when its sha256 is the one the model's manifest names. */
  tokenizer(modelId: string): Promise<ModelTokenizer> {
    let t = this.tokenizers.get(modelId)
    if (t === undefined) {
      t = this.loadTokenizer(modelId)
      this.tokenizers.set(modelId, t)
      // A refused or failed load is asked again next time, not remembered.
      const loading = t
      loading.catch(() => this.tokenizers.get(modelId) === loading && this.tokenizers.delete(modelId))
    }
    return t
  }

  private async loadTokenizer(modelId: string): Promise<ModelTokenizer> {
    const [{ manifest }, { tokenizer }] = await Promise.all([
      callRpc(this.tracker, ClientToTracker, 'model.get', { modelId }),
      callRpc(this.tracker, ClientToTracker, 'model.tokenizer', { modelId }),
    ])
    checkTokenizer(
      manifest,
      tokenizer,
      'the tracker sent',
      'it is not the model’s, so it is not used; tell the tracker’s operator.',
    )
    return ModelTokenizer.load(modelId, tokenizer)
  }

  /**
   * From now on, a generation whose prompt begins with at least MIN_SHARED_TOKENS of an ended session's tokens (a
   * shared system prompt, few-shot examples, the same document) asks for that session's hosts and starts from their
   * cache: only the rest is prefilled and paid (route.plan's fork; the hosts keep a closed session's cache for its key
   * a few minutes). The gateway's generations use it; the app's chats keep their sessions instead (conversation()).
   */
  reusePrefixes(): this {
    this.prefixes ??= new PrefixBook()
    return this
  }

  /** Streams tokens; the generator's return value summarises the run (generation/generation.ts). */
  async *generate(request: GenerateRequest): AsyncGenerator<GeneratedToken, GenerationSummary> {
    const generation = await Generation.open(this.generationClient, request)
    return yield* generation.run()
  }

  /**
   * A conversation whose turns keep their cache on the hops (generation/conversation.ts): each turn sends only the
   * tokens after those its session holds. close() it when done.
   */
  conversation(options: ConversationOptions = {}): Conversation {
    return new Conversation(this.generationClient, options)
  }

  /**
   * Hands a session's receipts to the tracker, which pays the hosts
   * from this key pair's account; returns each one's verdict.
   */
  submitReceipts(session: string, receipts: readonly Receipt[]) {
    return callRpc(this.tracker, ClientToTracker, 'receipts.submit', { session, receipts: [...receipts] })
  }

  /**
   * Waits for the audits of the sessions ended so far (they run after each session, off its critical path); resolves
   * with the hosts they found lying since the last call, each banned at the tracker.
   */
  async auditsSettled(): Promise<string[]> {
    await Promise.all(this.auditing)
    return this.liars.splice(0)
  }

  /**
   * Closes the tracker connection once the sessions this client ended are acknowledged and their audits done, or after
   * `waitMs`: closing first would drop those calls, and the tracker would hold the rest of their credit until they
   * expire.
   */
  async close(waitMs = END_SESSION_WAIT_MS): Promise<void> {
    if (this.closed) return
    if (this.ending.size > 0 || this.auditing.size > 0) {
      let timer: NodeJS.Timeout | undefined
      const bound = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, waitMs)
      })
      await Promise.race([Promise.all([...this.ending, ...this.auditing]), bound])
      clearTimeout(timer)
    }
    this.closed = true
    this.idleLinks.close()
    this.punched?.close()
    this.tracker.close()
  }

  /** How this client reaches the hosts it punched to, or failed to (dataplane/punched-paths.ts): the Swarm screen's. */
  reached(): { hostId: string; path: 'punched' | 'relayed' }[] {
    return this.punched?.outcomes() ?? []
  }

  /**
   * What opening hops needs of this client: its key, its trusted CA, its tracker connection (span sessions use it too).
   */
  get hopOpener(): HopOpener {
    return {
      identity: this.identity,
      ca: this.ca,
      tracker: this.tracker,
      punched: this.punched,
      idleLinks: this.idleLinks,
    }
  }

  /** What a generation needs of this client: opening hops, its log, tokenizers, and ending its session. */
  private get generationClient(): GenerationClient {
    return {
      ...this.hopOpener,
      log: this.log,
      tokenizer: (modelId) => this.tokenizer(modelId),
      endSession: (session) => this.endSession(session),
      audit: (session, hops, ready) => this.audit(session, hops, ready),
      prefixes: this.prefixes,
    }
  }

  /**
   * Audits an ended session's picked hops in the background once `ready` settles (their sessions closed, what they
   * were forwarded fetched); auditsSettled() and close() wait for both.
   */
  private audit(session: string, hops: readonly AuditableHop[], ready: Promise<void>): void {
    const audit = ready
      .catch((error: Error) => this.log(`session ${session} did not close cleanly: ${error.message}`))
      .then(() => auditHops(this.tracker, session, hops, this.log))
      .then((liars) => {
        this.liars.push(...liars.map((h) => h.hop.hostId))
      })
      .finally(() => this.auditing.delete(audit))
    this.auditing.add(audit)
  }

  /** Tells the tracker the session is over so the rest of its credit hold is free again (best effort). */
  private endSession(session: string): void {
    const ending = callRpc(this.tracker, ClientToTracker, 'session.end', { session })
      .then(
        () => {},
        (e: Error) =>
          this.log(
            this.closed
              ? `session.end: session ${session} was not acknowledged before the client closed its tracker connection`
              : `ending session ${session} at the tracker failed: ${e.message}`,
          ),
      )
      .finally(() => this.ending.delete(ending))
    this.ending.add(ending)
  }
}

/** A client's punch signalling: its tracker's STUN port (asked once, again after a failure) and punch.open. */
function signalling(tracker: TrackerChannel, trackerUrl: string): PunchSignalling {
  let stunPort: Promise<number | null> | undefined
  return {
    get url() {
      return tracker.url ?? trackerUrl
    },
    stunPort() {
      if (stunPort === undefined) {
        const asked = callRpc(tracker, ClientToTracker, 'stun.port', {}).then((a) => a.port)
        asked.catch(() => {
          if (stunPort === asked) stunPort = undefined
        })
        stunPort = asked
      }
      return stunPort
    },
    offer: async (hostId, offer) => (await callRpc(tracker, ClientToTracker, 'punch.open', { hostId, offer })).answer,
  }
}
