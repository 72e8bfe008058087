// Several tracker instances serving one swarm: they share the PostgreSQL store and meet in Redis.
// Socket.IO's Redis adapter carries broadcasts between them (dashboard pushes, relayed frames to a
// host another instance holds); its server-side events carry each instance's hosts, their heartbeats
// (one batch per interval) and which stored records changed. Every instance keeps a mirror of the
// whole swarm's hosts, so routing, placement and hosts.list see every host wherever it connected.
import { randomBytes } from 'node:crypto'
import { createAdapter } from '@socket.io/redis-adapter'
import { Redis } from 'ioredis'
import type { Server as SocketServer } from 'socket.io'
import { ClusterBeats, ClusterChanged, ClusterHost, ClusterSnapshot, NeuronError, type RpcSocket } from '../../protocol'
import type { NonceBook } from '../access/auth'
import type { HostChecks } from '../checks/host-checks'
import { isPostgresUrl } from '../db/postgres-store'
import type { WindowCounter } from '../gateway/rate-limit'
import type { HostRegistry, LiveHost } from '../hosts/registry'
import type { ModelCatalog } from '../models/catalog'
import type { Reputation } from '../reputation/reputation'
import type { SwarmPlanner } from '../routing/swarm-planner'
import { RedisCounter, RedisNonces } from './redis-state'

export interface ClusterDeps {
  readonly io: SocketServer
  readonly registry: HostRegistry
  readonly checks: Pick<HostChecks, 'on' | 'load' | 'reload' | 'verifiedKey' | 'flushed'>
  readonly catalog: Pick<ModelCatalog, 'load'>
  readonly planner: Pick<SwarmPlanner, 'invalidate'>
  readonly reputation: Pick<Reputation, 'load'>
  readonly log: (line: string) => void
}

/** How long an instance waits for the others' snapshots of their hosts when it starts. */
const SNAPSHOT_WAIT_MS = 3_000
/**
 * The largest frame relayed to a host another instance holds. It crosses Redis as one pub/sub message,
 * to every instance: Redis drops a subscriber whose output buffer passes 32 MiB (its default
 * client-output-buffer-limit for pubsub), which would cut every instance off at once.
 */
export const MAX_CROSS_INSTANCE_BYTES = 8 * 1024 * 1024

export class TrackerCluster {
  /** This process's id among the instances: random, so a restarted instance is a new one. */
  readonly instance = randomBytes(8).toString('hex')
  readonly nonces: NonceBook
  readonly counter: WindowCounter
  private deps: ClusterDeps | undefined
  private readonly timers: NodeJS.Timeout[] = []

  private constructor(
    private readonly commands: Redis,
    private readonly subscriber: Redis,
    readonly url: string,
    private readonly outage: RedisOutage,
  ) {
    this.nonces = new RedisNonces(commands)
    this.counter = new RedisCounter(commands)
  }

  /** Connects to Redis (`redis://…`); a typed error that says what to check when it cannot. */
  static async connect(url: string): Promise<TrackerCluster> {
    const outage = new RedisOutage()
    const open = async () => {
      const r = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 3, enableOfflineQueue: true })
      // ioredis reconnects by itself; a command that cannot wait fails with its own error.
      r.on('error', (e: Error) => outage.error(e))
      try {
        await r.connect()
      } catch (error) {
        r.disconnect()
        throw error
      }
      return r
    }
    let commands: Redis | undefined
    try {
      commands = await open()
      return new TrackerCluster(commands, await open(), url, outage)
    } catch (error) {
      commands?.disconnect()
      throw new NeuronError(
        'redis_unreachable',
        `cannot reach Redis at ${redact(url)} (${error instanceof Error ? error.message : error}); check the URL ` +
          `and that redis-server is running.`,
      )
    }
  }

  /** The Socket.IO adapter that joins this instance's namespaces to the others'. */
  adapter(): ReturnType<typeof createAdapter> {
    return createAdapter(publishing(this.commands, this.outage), this.subscriber, {
      key: 'neuron.socket.io',
      requestsTimeout: SNAPSHOT_WAIT_MS,
    })
  }

  /**
   * Starts telling the others of this instance's hosts and listening for theirs (after the Socket.IO server exists).
   */
  async attach(deps: ClusterDeps, heartbeatMs: number): Promise<void> {
    this.deps = deps
    this.outage.log = deps.log
    const { io, registry, checks } = deps
    const on = (event: string, handle: (payload: unknown, ack?: unknown) => void) =>
      io.on(event, (...args: unknown[]) => {
        try {
          handle(args[0], args[1])
        } catch (error) {
          deps.log(`cluster: a malformed ${event} from another instance was dropped: ${(error as Error).message}`)
        }
      })
    on('cluster:host', (raw) => this.mirror(ClusterHost.parse(raw)))
    on('cluster:beats', (raw) => {
      const { instance, beats } = ClusterBeats.parse(raw)
      const now = Date.now()
      for (const [hostId, sessions] of beats) registry.heartbeat(hostId, sessions, now, instance)
    })
    on('cluster:changed', (raw) => this.onChanged(ClusterChanged.parse(raw)))
    on('cluster:snapshot', (ack) => {
      if (typeof ack === 'function') ack({ hosts: registry.own().map((h) => this.describe(h)) })
    })
    registry.on('changed', (hostId) => {
      const host = registry.get(hostId)
      if (host?.owner === null) io.serverSideEmit('cluster:host', this.describe(host))
    })
    checks.on('verified', (hostId) => {
      const host = registry.get(hostId)
      if (host?.owner === null) io.serverSideEmit('cluster:host', this.describe(host))
    })
    // After the ban is in the store: the others read it from there.
    checks.on('banned', (hostId) => void checks.flushed().then(() => this.changed({ kind: 'checks', hostId })))
    const every = (ms: number, f: () => void) => this.timers.push(setInterval(f, ms).unref())
    every(heartbeatMs, () => {
      const beats = registry
        .own()
        .filter((h) => h.online)
        .map((h) => [h.hostId, h.state.activeSessions] as [string, number])
      if (beats.length > 0) io.serverSideEmit('cluster:beats', { instance: this.instance, beats })
    })
    try {
      const answers: unknown[] = await io.serverSideEmitWithAck('cluster:snapshot')
      for (const answer of answers) for (const h of ClusterSnapshot.parse(answer).hosts) this.mirror(h)
    } catch (error) {
      // An instance that did not answer in time: its hosts arrive with their next change or batch of heartbeats.
      deps.log(`cluster: not every instance sent its hosts at start (${(error as Error).message})`)
    }
  }

  /** A stored record changed here: the other instances read it again. */
  changed(change: ClusterChanged): void {
    this.deps?.io.serverSideEmit('cluster:changed', change)
  }

  /**
   * The way to a host another instance holds: its room, which only the holding instance's socket is
   * in; answers come back through Redis. Undefined when no instance holds it.
   */
  hostLink(hostId: string): RpcSocket | undefined {
    const deps = this.deps
    const host = deps?.registry.get(hostId)
    if (deps === undefined || host === undefined || host.owner === null || !host.online) return undefined
    const room = deps.io.of('/hosts').to(hostRoom(hostId))
    return {
      on: () => undefined,
      onAny: () => undefined,
      timeout: (ms: number) => ({
        emitWithAck: async (event: string, ...args: unknown[]) => {
          const bytes = binaryBytes(args)
          if (bytes > MAX_CROSS_INSTANCE_BYTES)
            throw new NeuronError(
              'frame_too_large',
              `a frame of ${bytes} bytes cannot be relayed to host ${hostId} through another tracker instance (at ` +
                `most ${MAX_CROSS_INSTANCE_BYTES}); send the prompt in smaller chunks.`,
              { bytes, maxBytes: MAX_CROSS_INSTANCE_BYTES },
            )
          const answers: unknown[] = await room.timeout(ms).emitWithAck(event, ...args)
          if (answers.length === 0)
            throw new NeuronError('host_unreachable', `host ${hostId} is connected to no tracker instance now`)
          return answers[0]
        },
      }),
    }
  }

  async close(): Promise<void> {
    for (const t of this.timers) clearInterval(t)
    await Promise.all([this.commands.quit().catch(() => undefined), this.subscriber.quit().catch(() => undefined)])
  }

  private describe(h: LiveHost): ClusterHost {
    const verifiedFor = this.deps?.checks.verifiedKey(h.hostId) ?? null
    return {
      instance: this.instance,
      hostId: h.hostId,
      publicKey: h.publicKey,
      profile: h.profile,
      state: h.state,
      online: h.online,
      verifiedFor,
    }
  }

  private mirror(h: ClusterHost): void {
    const deps = this.deps
    if (deps === undefined || h.instance === this.instance) return
    const before = deps.registry.get(h.hostId)
    deps.registry.mirror(h.instance, h)
    // What the store knows of a host new here, before it is routed from here.
    if (h.online && before?.online !== true) {
      Promise.all([deps.checks.load(h.hostId), deps.reputation.load(h.hostId)]).then(
        () => deps.planner.invalidate(),
        (e: Error) => deps.log(`cluster: reading host ${h.hostId}'s record failed: ${e.message}`),
      )
    }
  }

  private onChanged(change: ClusterChanged): void {
    const deps = this.deps
    if (deps === undefined) return
    const read = change.kind === 'checks' ? deps.checks.reload(change.hostId) : deps.catalog.load()
    read.then(
      () => deps.planner.invalidate(),
      (e: Error) => deps.log(`cluster: reading a changed record failed: ${e.message}`),
    )
  }
}

/**
 * Connects an instance to the others: they must share a PostgreSQL
 * store, as each keeps only a mirror of what the others hold.
 */
export async function joinCluster(redisUrl: string, dbPath: string): Promise<TrackerCluster> {
  if (!isPostgresUrl(dbPath))
    throw new NeuronError(
      'bad_option',
      `several tracker instances (--redis) share one PostgreSQL database: give --db postgres://…, not ${dbPath}; ` +
        `run one instance alone on SQLite.`,
    )
  return TrackerCluster.connect(redisUrl)
}

/** The Socket.IO room a host's tracker connection joins: relays and checks reach it there from any instance. */
export function hostRoom(hostId: string): string {
  return `host:${hostId}`
}

/** A URL as it may be logged: without its password. */
function redact(url: string): string {
  return url.replace(/\/\/([^:@/]*):[^@/]*@/, '//$1:***@')
}

/** Bytes of binary arguments (Buffers, typed arrays) in a message, however deep: what the adapter packs. */
function binaryBytes(value: unknown, depth = 0): number {
  if (ArrayBuffer.isView(value)) return value.byteLength
  if (value instanceof ArrayBuffer) return value.byteLength
  if (depth > 8 || value === null || typeof value !== 'object') return 0
  let n = 0
  for (const v of Array.isArray(value) ? value : Object.values(value)) n += binaryBytes(v, depth + 1)
  return n
}

/** Redis errors logged once per outage (ioredis reports every reconnect try), and its recovery. */
class RedisOutage {
  log: (line: string) => void = () => {}
  private since: number | null = null

  error(e: Error): void {
    if (this.since !== null) return
    this.since = Date.now()
    this.log(`cluster: Redis unreachable (${e.message}); other instances' hosts and relays wait for it`)
  }

  published(): void {
    if (this.since === null) return
    this.log(`cluster: Redis back after ${Date.now() - this.since} ms`)
    this.since = null
  }
}

/**
 * The adapter's publishing client: the adapter publishes without awaiting, and ioredis rejects a command
 * that waited through three reconnect tries, so a Redis restart would end every instance with an
 * unhandled rejection. Here a failed publish is logged and dropped (a broadcast to the others is lost,
 * as when an instance is down); every other method is the client's own.
 */
function publishing(redis: Redis, outage: RedisOutage): Redis {
  return new Proxy(redis, {
    get(target, prop) {
      if (prop === 'publish')
        return (...args: Parameters<Redis['publish']>) =>
          target.publish(...args).then(
            (n) => {
              outage.published()
              return n
            },
            (e: Error) => {
              outage.error(e)
              return 0
            },
          )
      const value: unknown = Reflect.get(target, prop, target)
      return typeof value === 'function' ? value.bind(target) : value
    },
  })
}
