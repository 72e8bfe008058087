import { EventEmitter } from 'node:events'
import type { NodeIdentity } from '../identity/keys'
import { NeuronError, type RpcSocket } from '../protocol'
import {
  connectAnyTracker,
  connectTracker,
  type TrackerConnectionOptions,
  type TrackerNamespace,
  type TrackerSocket,
  trackerUrls,
} from './tracker-connection'

/** What a client needs of its tracker connection: calls, pushes, and whether it is up now. */
export interface TrackerChannel extends RpcSocket {
  readonly connected: boolean
  readonly trackerKey: string
  /** The instance it is on now (a swarm of several moves between them). */
  readonly url?: string
  once(event: 'disconnect', listener: (reason: string) => void): unknown
  close(): void
}

/**
 * Connects a client to one tracker, or to several instances of one swarm (a list, or comma-separated),
 * which it then moves between when the one it is on goes away (TrackerLink).
 */
export async function openTrackerChannel(
  trackerUrl: string | readonly string[],
  namespace: TrackerNamespace,
  identity: NodeIdentity,
  options: TrackerConnectionOptions = {},
  log: (line: string) => void = () => {},
): Promise<TrackerChannel> {
  const urls = trackerUrls(trackerUrl)
  if (urls.length === 1) return connectTracker(urls[0] as string, namespace, identity, options)
  return TrackerLink.open(urls, namespace, identity, options, log)
}

/** Longest wait between two tries of the instances once all of them failed. */
const MAX_BACKOFF_MS = 5_000

/**
 * A connection to a tracker run as several instances (tracker/cluster/): when the instance it is on
 * goes away, it joins the next that answers (a fresh challenge each time, backing off to 5 s while
 * none does), and a call made meanwhile waits for it, within the call's own timeout. Listeners follow
 * it from connection to connection; `reconnected` tells what was joined on the old one must be asked
 * again (dashboard subscriptions). `disconnect` is told once, when it is closed.
 */
export class TrackerLink implements TrackerChannel {
  private readonly listeners: [string, (...args: unknown[]) => void][] = []
  private readonly anyListeners: ((event: unknown, ...args: unknown[]) => void)[] = []
  private readonly events = new EventEmitter<{ disconnect: [reason: string]; reconnected: [url: string]; up: [] }>()
  private closed = false

  private constructor(
    private socket: TrackerSocket,
    private index: number,
    private readonly urls: readonly string[],
    private readonly namespace: TrackerNamespace,
    private readonly identity: NodeIdentity,
    private readonly options: TrackerConnectionOptions,
    private readonly log: (line: string) => void,
  ) {
    this.events.setMaxListeners(0)
    this.watch(socket)
  }

  static async open(
    urls: readonly string[],
    namespace: TrackerNamespace,
    identity: NodeIdentity,
    options: TrackerConnectionOptions = {},
    log: (line: string) => void = () => {},
  ): Promise<TrackerLink> {
    const { socket, index } = await connectAnyTracker(urls, namespace, identity, options)
    return new TrackerLink(socket, index, urls, namespace, identity, options, log)
  }

  get connected(): boolean {
    return !this.closed && this.socket.connected
  }

  get trackerKey(): string {
    return this.socket.trackerKey
  }

  /** The instance it is on now. */
  get url(): string {
    return this.urls[this.index] as string
  }

  on(event: string, listener: (...args: unknown[]) => void): this {
    if (event === 'reconnected') this.events.on('reconnected', listener)
    else {
      this.listeners.push([event, listener])
      this.socket.on(event, listener)
    }
    return this
  }

  onAny(listener: (event: unknown, ...args: unknown[]) => void): this {
    this.anyListeners.push(listener)
    this.socket.onAny(listener)
    return this
  }

  once(_event: 'disconnect', listener: (reason: string) => void): this {
    this.events.once('disconnect', listener)
    return this
  }

  timeout(ms: number): { emitWithAck(event: string, ...args: unknown[]): Promise<unknown> } {
    return {
      emitWithAck: async (event: string, ...args: unknown[]) => {
        const deadline = Date.now() + ms
        await this.up(ms)
        return this.socket.timeout(Math.max(1, deadline - Date.now())).emitWithAck(event, ...args)
      },
    }
  }

  close(): void {
    if (this.closed) return
    this.closed = true
    this.socket.close()
    this.events.emit('up')
    this.events.emit('disconnect', 'io client disconnect')
  }

  /** Resolves once connected (at once if it is), or rejects after `ms`. */
  private up(ms: number): Promise<void> {
    if (this.closed)
      return Promise.reject(new NeuronError('closed', 'this tracker connection was closed; connect again.'))
    if (this.socket.connected) return Promise.resolve()
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.events.off('up', onUp)
        reject(
          new NeuronError(
            'tracker_unreachable',
            `no tracker instance of ${this.urls.join(', ')} answered within ${ms} ms`,
          ),
        )
      }, ms)
      const onUp = () => {
        clearTimeout(timer)
        if (this.closed) reject(new NeuronError('closed', 'this tracker connection was closed; connect again.'))
        else resolve()
      }
      this.events.once('up', onUp)
    })
  }

  private watch(socket: TrackerSocket): void {
    socket.once('disconnect', (reason: string) => {
      if (this.closed || socket !== this.socket) return
      this.log(`lost tracker instance ${this.url} (${reason}); joining another`)
      void this.rejoin()
    })
  }

  private async rejoin(): Promise<void> {
    // The next instance first: the one just lost is likely down.
    for (let attempt = 0, delayMs = 100; !this.closed; attempt++, delayMs = Math.min(MAX_BACKOFF_MS, delayMs * 2)) {
      try {
        const { socket, index } = await connectAnyTracker(
          this.urls,
          this.namespace,
          this.identity,
          { ...this.options, trackerKey: this.trackerKey },
          this.index + 1,
        )
        if (this.closed) {
          socket.close()
          return
        }
        for (const [event, listener] of this.listeners) socket.on(event, listener)
        for (const listener of this.anyListeners) socket.onAny(listener)
        this.socket = socket
        this.index = index
        this.watch(socket)
        this.log(`joined tracker instance ${this.url}`)
        this.events.emit('up')
        this.events.emit('reconnected', this.url)
        return
      } catch (error) {
        if (attempt === 0 || attempt % 10 === 0)
          this.log(`no tracker instance answered (${error instanceof Error ? error.message : error}); retrying`)
        await new Promise((r) => setTimeout(r, delayMs))
      }
    }
  }
}
