// The simulated hosts of bench:tracker-scale, in their own process (forked by bench/tracker-scale.ts):
// each a real authenticated Socket.IO connection on /hosts that says hello with what it serves and
// heartbeats at the interval the tracker gives, as `neuron host` does; none runs a model. Commands
// come over IPC; the parent keeps the keys (it signs the hosts' receipts).
import { connectTracker, type TrackerSocket } from '../dataplane/tracker-connection'
import { NodeIdentity } from '../identity/keys'
import { callRpc, type HardwareProfile, HostToTracker } from '../protocol'

export type FleetCommand =
  | {
      readonly kind: 'connect'
      readonly urls: readonly string[]
      readonly keys: readonly string[]
      readonly modelId: string
      readonly nLayer: number
    }
  | { readonly kind: 'measure'; readonly windowMs: number }
  | { readonly kind: 'disconnect' }

export type FleetAnswer =
  | {
      readonly kind: 'connected'
      readonly hosts: number
      readonly failed: number
      readonly ms: number
      readonly firstError?: string
    }
  | {
      readonly kind: 'measured'
      readonly acked: number
      readonly failed: number
      readonly p50Ms: number
      readonly p99Ms: number
      readonly windowMs: number
    }
  | { readonly kind: 'disconnected' }

const PROFILE: HardwareProfile = {
  cpu: { model: 'simulated', cores: 8, physicalCores: 4, flags: ['avx2'] },
  memory: { totalBytes: 16 * 2 ** 30, availableBytes: 12 * 2 ** 30 },
  gpus: [],
  disk: { path: '/tmp', freeBytes: 100 * 2 ** 30, readBytesPerSecond: 500 * 2 ** 20 },
  memoryBytesPerSecond: 20 * 2 ** 30,
  threads: 4,
}
/** Connections opened at once while the fleet joins. */
const CONNECT_AT_ONCE = 64

interface SimHost {
  readonly socket: TrackerSocket
  timer: NodeJS.Timeout | undefined
}

const hosts: SimHost[] = []
let latencies: number[] = []
let failedBeats = 0

/** The blocks host i serves: the whole model, its first part or its second, in turn. */
function rangeOf(i: number, nLayer: number): [number, number] {
  const cut = Math.max(1, Math.floor(nLayer / 2))
  return i % 3 === 0 ? [0, nLayer] : i % 3 === 1 ? [0, cut] : [cut, nLayer]
}

async function connect(c: Extract<FleetCommand, { kind: 'connect' }>): Promise<FleetAnswer> {
  const started = Date.now()
  let failed = 0
  let firstError: string | undefined
  let next = 0
  const one = async (i: number) => {
    const identity = NodeIdentity.fromPem(c.keys[i] as string)
    const socket = await connectTracker(c.urls[i % c.urls.length] as string, '/hosts', identity, { timeoutMs: 120_000 })
    const blocks = rangeOf(i, c.nLayer)
    const state = {
      modelId: c.modelId,
      blocks,
      status: 'ready' as const,
      progress: 1,
      kvCapacityTokens: 4096,
      activeSessions: 0,
      maxSessions: 8,
      msPerBlock: 1 + (i % 7) * 0.25,
      endpoint: `ws://127.0.0.1:9/h${i}`,
    }
    const hello = await callRpc(socket, HostToTracker, 'host.hello', { profile: PROFILE, state }, 120_000)
    const host: SimHost = { socket, timer: undefined }
    // Each at its own phase of the interval, as hosts that joined at different times.
    const beat = () => {
      const t0 = performance.now()
      callRpc(socket, HostToTracker, 'host.heartbeat', { activeSessions: 0 }, hello.heartbeatMs).then(
        () => latencies.push(performance.now() - t0),
        () => failedBeats++,
      )
    }
    host.timer = setTimeout(() => {
      beat()
      host.timer = setInterval(beat, hello.heartbeatMs)
    }, Math.random() * hello.heartbeatMs)
    hosts.push(host)
  }
  const worker = async () => {
    while (next < c.keys.length) {
      const i = next++
      await one(i).catch((e: Error) => {
        failed++
        firstError ??= e.message
      })
    }
  }
  await Promise.all(Array.from({ length: CONNECT_AT_ONCE }, worker))
  return {
    kind: 'connected',
    hosts: hosts.length,
    failed,
    ms: Date.now() - started,
    ...(firstError === undefined ? {} : { firstError }),
  }
}

async function measure(windowMs: number): Promise<FleetAnswer> {
  latencies = []
  failedBeats = 0
  await new Promise((r) => setTimeout(r, windowMs))
  const sorted = [...latencies].sort((a, b) => a - b)
  const at = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0
  return { kind: 'measured', acked: sorted.length, failed: failedBeats, p50Ms: at(0.5), p99Ms: at(0.99), windowMs }
}

function disconnect(): FleetAnswer {
  for (const h of hosts.splice(0)) {
    clearTimeout(h.timer)
    clearInterval(h.timer)
    h.socket.close()
  }
  return { kind: 'disconnected' }
}

process.on('message', (raw: FleetCommand) => {
  const run = async (): Promise<FleetAnswer> =>
    raw.kind === 'connect' ? connect(raw) : raw.kind === 'measure' ? measure(raw.windowMs) : disconnect()
  run().then(
    (answer) => process.send?.(answer),
    (e: Error) => {
      console.error(`fleet: ${e.stack ?? e.message}`)
      process.exit(1)
    },
  )
})
process.on('disconnect', () => process.exit(0))
