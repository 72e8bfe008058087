// npm run bench:punch-transport [-- --rounds 3 --decode-steps 2000 --prefill-frames 16 --message-kib 256
//   --transports ws,werift[,quic] --phase-timeout-s 120]
//
// Issue 39, item 1: which hole-punching transport, by measurement. Each transport links two processes on 127.0.0.1
// (a caller and a hop, each end's CPU its own), and the caller sends hidden-state frames one at a time, each answered
// by a 64-byte answer as a hop answers: decode frames (2 048 f16 + 64 B header) for round trips per second, prefill
// frames (512 x 2 048 f16 = 2 MiB + 64 B) for MB/s (10^6 bytes, both ways), and the CPU of both ends per GB moved.
// Setup is the time from createOffer to an open data channel (werift), from dial to an open stream (QUIC), from
// `new WebSocket` to open (ws: TCP, TLS and the upgrade). Rounds alternate the order; each prints its figures and the
// load average; the last line is one JSON object with the medians and the ratios against ws.
// - ws (baseline): today's data plane, DataPlaneListener over TLS and a pinned dataPlaneSocket (bench/punch-ws.ts).
// - werift 0.24.4 (pinned: 0.25 needs Node 22): RTCPeerConnection pair, host candidates on loopback, one ordered
//   reliable data channel, frames cut to --message-kib messages and reassembled (bench/punch-werift.ts).
// - @chainsafe/libp2p-quic 1.1.8, when installed by hand (`npm install --no-save @chainsafe/libp2p-quic@1.1.8`): 2.x
//   needs Node >= 22, out on our Node 20; 1.1.8 declares Node >= 20 and runs here with its prebuilt linux-x64 binary,
//   but cannot be a dependency: the registry we install from lacks its other platforms' binaries, and `npm ci` then
//   fails on the lockfile (bench/punch-quic.ts). Without it the bench measures ws and werift.
//
// Measured here (2 cores, Node 20.20.2; 3 rounds, werift messages of 256 KiB, QUIC installed by hand). Another
// session's tests and two to four `yes` processes held the load average at 9.2-10.3 throughout: the absolute figures
// are low and noisy, the ratios less so (the rounds interleave the transports). Rounds 1, 2, 3:
//            setup ms          round trips/s      decode CPU ms/GB       MB/s              prefill CPU ms/GB
//   ws       16.8  24.2  21.3  4173  3376  5200   46.8k  57.6k  50.6k    193   136   123   5.6k   8.1k   6.7k
//   werift   431   360   467   1059  821   648    237k   264k   322k     11.1  6.9   9.1   91k    139k   113k
//   quic     6.6   7.5   47    2281  2301  1538   108k   115k   156k     80    83    85    16.5k  13.4k  11.5k
// Medians: ws 21.3 ms, 4 173/s, 50.6k, 135.6 MB/s, 6.7k; werift 431 ms, 821/s, 264k, 9.1 MB/s, 113k; quic 7.5 ms,
// 2 281/s, 115k, 83.0 MB/s, 13.4k. A decode round trip costs both ends 0.21 ms of CPU over ws, 1.1 ms over werift,
// 0.49 ms over QUIC. werift/ws: round trips/s 0.197, MB/s 0.067, CPU/GB 5.2x (decode) and 16.9x (prefill), setup 20x.
// quic/ws: 0.546, 0.612, 2.3x and 2.0x, setup 0.35x. werift with 64 KiB messages (--message-kib 64, another run):
// 828/s, 8.9 MB/s, 110k CPU ms/GB, the same within the noise.
//
// The choice: werift, for the hole-punched path only, beside today's WebSocket, which stays wherever a host's port is
// reachable. QUIC measures better (0.61x ws in MB/s against werift's 0.067x) but is out: 2.x needs Node 22; 1.1.8
// cannot be a dependency (above) and is a native binary per platform; and it punches no hole by itself (its dialer
// binds a UDP socket apart from its listener's, so libp2p's relay and DCUtR would have to come too). werift brings
// ICE: STUN candidates, connectivity checks from the very socket the peer will use, TURN as the fallback, in
// TypeScript with nothing to build or download. Its cost is bearable on the path it serves: ~1.2 ms a round trip is
// small beside a home link's RTT, and 9 MB/s (72 Mbit/s) is above most home uplinks, though a prefill burns about one
// core while it runs (113 CPU-s per GB).
// Risks found:
// - throughput is CPU-bound in werift's SCTP, in JavaScript: 1 200-byte DATA chunks, each its own DTLS record and
//   datagram; a busy host's compute and a punched link compete for its cores;
// - max-message-size is 64 KiB unless both sides raise it (we advertise 256 KiB): frames are cut and reassembled;
// - setup takes ~0.4 s in a fresh process (DTLS's handshake in JavaScript, ~120 ms warm) against ~20 ms for TLS over
//   TCP: links should be kept open, not made per generation;
// - its defaults reach out: iceServers is stun.l.google.com unless set, and it gathers every interface's address;
// - one main maintainer, and 0.25 needs Node 22: we stay on 0.24.4 until we move. 15 packages, about 18 MB, 11 MB of
//   it mediabunny, a media library a data channel never uses; no install script, no binary, no deprecation warning;
// - its ESM build (lib/index.mjs) loads under tsx and vitest as it is; its UDP sockets close a moment after close()
//   resolves (dataplane/werift-channel.test.ts waits for them).
import { type ChildProcess, spawn } from 'node:child_process'
import { loadavg } from 'node:os'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { median } from './cpu-use'
import type { EndpointOptions, FromEndpoint, Role, ToEndpoint, Transport } from './punch-endpoint'
import { loadQuic } from './punch-quic'

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    'decode-steps': { type: 'string', default: '2000' },
    'prefill-frames': { type: 'string', default: '16' },
    'message-kib': { type: 'string', default: '256' },
    transports: { type: 'string' },
    'phase-timeout-s': { type: 'string', default: '120' },
  },
})
function wholeNumber(name: keyof typeof values, least: number): number {
  const n = Number(values[name])
  if (!Number.isInteger(n) || n < least) throw new Error(`--${name} takes a whole number of at least ${least}`)
  return n
}
const ROUNDS = wholeNumber('rounds', 1)
const DECODE_STEPS = wholeNumber('decode-steps', 1)
const PREFILL_FRAMES = wholeNumber('prefill-frames', 1)
const PHASE_TIMEOUT_MS = wholeNumber('phase-timeout-s', 1) * 1000
const OPTIONS: EndpointOptions = { maxMessage: wholeNumber('message-kib', 1) * 1024 }
const QUIC = await loadQuic()
const TRANSPORTS = (values.transports?.split(',') ?? [
  'ws',
  'werift',
  ...(typeof QUIC === 'string' ? [] : ['quic']),
]) as Transport[]
for (const t of TRANSPORTS)
  if (!['ws', 'werift', 'quic'].includes(t)) throw new Error(`--transports: ${t} is none of ws, werift, quic`)
if (!TRANSPORTS.includes('ws')) throw new Error('--transports must include ws: it is the baseline of every ratio')
if (TRANSPORTS.includes('quic') && typeof QUIC === 'string') throw new Error(QUIC)

/** Hidden-state bytes per frame: f16 values of a 2 048-wide model, one row at decode, 512 at prefill. */
const DECODE_HIDDEN_BYTES = 2048 * 2
const PREFILL_HIDDEN_BYTES = 512 * 2048 * 2
const DECODE_WARMUP = 200
const PREFILL_WARMUP = 2
const ENDPOINT = fileURLToPath(new URL('./punch-endpoint.ts', import.meta.url))

type Reply<K extends FromEndpoint['kind']> = Extract<FromEndpoint, { kind: K }>

/** One end in its own process, asked things over IPC, each answer awaited with a deadline. */
class Endpoint {
  private readonly inbox: FromEndpoint[] = []
  private wake: (() => void) | undefined
  private ended: string | undefined
  /** Relays a WebRTC offer from this end (the caller) to the hop. */
  onOffer: ((sdp: string) => void) | undefined

  private constructor(
    private readonly child: ChildProcess,
    readonly name: string,
  ) {
    child.on('message', (raw) => {
      const message = raw as FromEndpoint
      if (message.kind === 'offer') this.onOffer?.(message.sdp)
      else this.inbox.push(message)
      this.wake?.()
    })
    child.on('exit', (code, signal) => {
      this.ended = `the ${name} process ended (${signal ?? `exit code ${code}`})`
      this.wake?.()
    })
  }

  static start(role: Role, transport: Transport): Endpoint {
    const child = spawn(process.execPath, ['--import', 'tsx', ENDPOINT, role, transport, JSON.stringify(OPTIONS)], {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    })
    return new Endpoint(child, `${transport} ${role}`)
  }

  send(message: ToEndpoint): void {
    this.child.send(message)
  }

  /** The next message of `kind`; fails on the end's failure, its exit, or after `timeoutMs`. */
  async next<K extends FromEndpoint['kind']>(kind: K, timeoutMs: number, doing: string): Promise<Reply<K>> {
    const deadline = performance.now() + timeoutMs
    for (;;) {
      const at = this.inbox.findIndex((m) => m.kind === kind || m.kind === 'failed')
      const found = at < 0 ? undefined : this.inbox.splice(at, 1)[0]
      if (found?.kind === 'failed') throw new Error(`the ${this.name} failed ${doing}: ${found.message}`)
      if (found !== undefined) return found as Reply<K>
      if (this.ended !== undefined) throw new Error(`${this.ended} while ${doing}`)
      const left = deadline - performance.now()
      if (left <= 0)
        throw new Error(`the ${this.name} took more than ${timeoutMs / 1000} s ${doing}: the transport is stuck`)
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left)
        this.wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      this.wake = undefined
    }
  }

  ask<K extends FromEndpoint['kind']>(message: ToEndpoint, kind: K, timeoutMs: number, doing: string) {
    this.send(message)
    return this.next(kind, timeoutMs, doing)
  }

  kill(): void {
    if (this.child.exitCode === null && this.child.signalCode === null) this.child.kill('SIGKILL')
  }
}

interface Phase {
  readonly seconds: number
  readonly bytes: number
  readonly frames: number
  /** Both ends' CPU (user + system, every thread). */
  readonly cpuMs: number
}

interface RoundFigures {
  readonly setup_ms: number
  readonly round_trips_per_s: number
  readonly decode_cpu_ms_per_gb: number
  readonly mb_per_s: number
  readonly prefill_cpu_ms_per_gb: number
}
type Metric = keyof RoundFigures
const METRICS: readonly Metric[] = [
  'setup_ms',
  'round_trips_per_s',
  'decode_cpu_ms_per_gb',
  'mb_per_s',
  'prefill_cpu_ms_per_gb',
]

/** Figures made metric by metric. */
function figuresOf(of: (metric: Metric) => number): RoundFigures {
  const [setup_ms, round_trips_per_s, decode_cpu_ms_per_gb, mb_per_s, prefill_cpu_ms_per_gb] = METRICS.map(of)
  return { setup_ms, round_trips_per_s, decode_cpu_ms_per_gb, mb_per_s, prefill_cpu_ms_per_gb } as RoundFigures
}

async function cpuMicros(ends: readonly Endpoint[]): Promise<number> {
  const replies = await Promise.all(ends.map((e) => e.ask({ kind: 'cpu' }, 'cpu', 10_000, 'reading its CPU time')))
  return replies.reduce((sum, r) => sum + r.micros, 0)
}

async function phase(hop: Endpoint, caller: Endpoint, frames: number, hiddenBytes: number, doing: string) {
  const before = await cpuMicros([hop, caller])
  const ran = await caller.ask({ kind: 'run', frames, hiddenBytes }, 'ran', PHASE_TIMEOUT_MS, doing)
  const after = await cpuMicros([hop, caller])
  return { seconds: ran.seconds, bytes: ran.bytes, frames, cpuMs: (after - before) / 1000 } satisfies Phase
}

/** One round of one transport: connect, warm up, decode, warm up, prefill, close. */
async function measure(transport: Transport): Promise<RoundFigures> {
  const hop = Endpoint.start('hop', transport)
  const caller = Endpoint.start('caller', transport)
  try {
    const listening = await hop.next('listening', 60_000, 'starting')
    caller.onOffer = (sdp) => {
      hop
        .ask({ kind: 'offer', sdp }, 'answer', 30_000, 'answering the offer')
        .then((answer) => caller.send({ kind: 'answer', sdp: answer.sdp }))
        .catch((e: Error) => caller.send({ kind: 'answer', sdp: `no answer: ${e.message}` }))
    }
    const { endpoint, fingerprint } = listening
    const connected = await caller.ask({ kind: 'connect', endpoint, fingerprint }, 'connected', 60_000, 'connecting')
    const warmup = (frames: number, hidden: number) =>
      caller.ask({ kind: 'run', frames, hiddenBytes: hidden }, 'ran', PHASE_TIMEOUT_MS, 'warming up')
    await warmup(DECODE_WARMUP, DECODE_HIDDEN_BYTES)
    const decode = await phase(hop, caller, DECODE_STEPS, DECODE_HIDDEN_BYTES, 'in the decode phase')
    await warmup(PREFILL_WARMUP, PREFILL_HIDDEN_BYTES)
    const prefill = await phase(hop, caller, PREFILL_FRAMES, PREFILL_HIDDEN_BYTES, 'in the prefill phase')
    await caller.ask({ kind: 'close' }, 'closed', 30_000, 'closing')
    await hop.ask({ kind: 'close' }, 'closed', 30_000, 'closing')
    return {
      setup_ms: connected.setupMs,
      round_trips_per_s: decode.frames / decode.seconds,
      decode_cpu_ms_per_gb: decode.cpuMs / (decode.bytes / 1e9),
      mb_per_s: prefill.bytes / 1e6 / prefill.seconds,
      prefill_cpu_ms_per_gb: prefill.cpuMs / (prefill.bytes / 1e9),
    }
  } finally {
    caller.kill()
    hop.kill()
  }
}

const round1 = (x: number) => Math.round(x * 10) / 10
const grouped = (x: number) => Math.round(x).toLocaleString('en-US')
const load = () => loadavg().map((l) => Math.round(l * 100) / 100)

function line(label: string, transport: Transport, f: RoundFigures): string {
  return (
    `${label} ${transport.padEnd(6)} setup ${round1(f.setup_ms)} ms | decode ${grouped(f.round_trips_per_s)} ` +
    `round trips/s, ${grouped(f.decode_cpu_ms_per_gb)} CPU ms/GB | prefill ${round1(f.mb_per_s)} MB/s, ` +
    `${grouped(f.prefill_cpu_ms_per_gb)} CPU ms/GB`
  )
}

async function main(): Promise<void> {
  if (typeof QUIC === 'string' && !TRANSPORTS.includes('quic')) console.log(`punch-transport: no QUIC: ${QUIC}`)
  console.log(
    `punch-transport: ${ROUNDS} rounds of ${TRANSPORTS.join(', ')}; decode ${DECODE_STEPS} steps, prefill ` +
      `${PREFILL_FRAMES} x 2 MiB, werift messages of ${OPTIONS.maxMessage / 1024} KiB; load ${load().join(' ')}`,
  )
  const figures = new Map<Transport, RoundFigures[]>(TRANSPORTS.map((t) => [t, []]))
  for (let round = 1; round <= ROUNDS; round++) {
    const order = round % 2 === 1 ? TRANSPORTS : [...TRANSPORTS].reverse()
    for (const transport of order) {
      const f = await measure(transport)
      figures.get(transport)?.push(f)
      console.log(`${line(`round ${round}`, transport, f)} | load ${load().join(' ')}`)
    }
  }
  const medians = new Map(TRANSPORTS.map((t) => [t, figuresOf((m) => median((figures.get(t) ?? []).map((r) => r[m])))]))
  const medianOf = (t: Transport) => medians.get(t) ?? figuresOf(() => Number.NaN)
  for (const t of TRANSPORTS) console.log(line('median ', t, medianOf(t)))
  const ratios = Object.fromEntries(
    TRANSPORTS.filter((t) => t !== 'ws').map((t) => [
      `${t}_vs_ws`,
      figuresOf((m) => Math.round((medianOf(t)[m] / medianOf('ws')[m]) * 1000) / 1000),
    ]),
  )
  const rounded = Object.fromEntries(TRANSPORTS.map((t) => [t, figuresOf((m) => round1(medianOf(t)[m]))]))
  console.log(
    JSON.stringify({
      bench: 'punch-transport',
      rounds: ROUNDS,
      decode_steps: DECODE_STEPS,
      prefill_frames: PREFILL_FRAMES,
      werift_message_bytes: OPTIONS.maxMessage,
      load_avg: load(),
      medians: rounded,
      ...ratios,
    }),
  )
}

await main().catch((error: Error) => {
  console.error(`punch-transport failed: ${error.message}`)
  process.exitCode = 1
})
