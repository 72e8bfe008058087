// One end of a link in bench/punch-transport.ts, in a process of its own so that each end's CPU is its own:
// `punch-endpoint.ts hop|caller ws|werift|quic '{"maxMessage":65536}'`, driven over the IPC channel of its parent
// (which also relays WebRTC's offer and answer: the signalling a tracker would carry).
import { fileURLToPath } from 'node:url'
import {
  ANSWER_BYTES,
  answerTo,
  checkAnswer,
  type FrameChannel,
  FrameRequester,
  hopFrame,
  numberFrame,
} from './punch-frames'
import { dialQuic, listenQuic, loadQuic, type Quic } from './punch-quic'
import { answerWerift, offerWerift } from './punch-werift'
import { connectWs, listenWs } from './punch-ws'

export type Transport = 'ws' | 'werift' | 'quic'
export type Role = 'hop' | 'caller'
export interface EndpointOptions {
  /** Largest data channel message werift's frames are cut to. */
  readonly maxMessage: number
}

/** What the parent sends an endpoint. */
export type ToEndpoint =
  | { kind: 'cpu' }
  | { kind: 'connect'; endpoint: string; fingerprint: string }
  | { kind: 'offer'; sdp: string }
  | { kind: 'answer'; sdp: string }
  | { kind: 'run'; frames: number; hiddenBytes: number }
  | { kind: 'close' }

/** What an endpoint sends its parent. */
export type FromEndpoint =
  | { kind: 'cpu'; micros: number }
  | { kind: 'listening'; endpoint: string; fingerprint: string }
  | { kind: 'offer'; sdp: string }
  | { kind: 'answer'; sdp: string }
  | { kind: 'connected'; setupMs: number }
  | { kind: 'ran'; seconds: number; bytes: number }
  | { kind: 'closed' }
  | { kind: 'failed'; message: string }

/** Frames past this are refused by every transport here (a prefill frame is 2 MiB). */
const MAX_FRAME_BYTES = 16 * 1024 * 1024

function tell(message: FromEndpoint): void {
  process.send?.(message)
}

function cpuMicros(): number {
  const { user, system } = process.cpuUsage()
  return user + system
}

/** The hop: listens (or waits for the offer), answers every frame with ANSWER_BYTES, closes when told. */
async function hop(transport: Transport, options: EndpointOptions): Promise<void> {
  let close: () => Promise<void> = async () => {}
  if (transport === 'werift') tell({ kind: 'listening', endpoint: '', fingerprint: '' })
  else {
    const listening =
      transport === 'ws'
        ? await listenWs(answerTo, MAX_FRAME_BYTES)
        : { fingerprint: '', ...(await listenQuic(await quic(), answerTo, MAX_FRAME_BYTES)) }
    close = listening.close
    tell({ kind: 'listening', endpoint: listening.endpoint, fingerprint: listening.fingerprint })
  }
  serve(async (message) => {
    if (message.kind === 'offer') {
      const answered = await answerWerift(message.sdp, answerTo, options.maxMessage, MAX_FRAME_BYTES)
      close = answered.close
      tell({ kind: 'answer', sdp: answered.sdp })
    } else if (message.kind === 'close') await closeAndExit(close)
  })
}

/** The caller: connects when told, then sends each run's frames one at a time, checking every answer. */
async function caller(transport: Transport, options: EndpointOptions): Promise<void> {
  let channel: FrameChannel | undefined
  let requester: FrameRequester | undefined
  let answerSdp: ((sdp: string) => void) | undefined
  serve(async (message) => {
    if (message.kind === 'connect') {
      const connected = await connect(transport, message, options, (offer) => {
        tell({ kind: 'offer', sdp: offer })
        return new Promise((resolve) => {
          answerSdp = resolve
        })
      })
      channel = connected.channel
      requester = new FrameRequester(channel)
      tell({ kind: 'connected', setupMs: connected.setupMs })
    } else if (message.kind === 'answer') answerSdp?.(message.sdp)
    else if (message.kind === 'run') {
      if (requester === undefined) throw new Error('told to run before connecting')
      const frame = hopFrame(message.hiddenBytes)
      const started = performance.now()
      for (let seq = 0; seq < message.frames; seq++) {
        checkAnswer(await requester.request(numberFrame(frame, seq)), seq, frame.byteLength)
      }
      const seconds = (performance.now() - started) / 1000
      tell({ kind: 'ran', seconds, bytes: message.frames * (frame.byteLength + ANSWER_BYTES) })
    } else if (message.kind === 'close') await closeAndExit(() => channel?.close() ?? Promise.resolve())
  })
}

async function connect(
  transport: Transport,
  to: { endpoint: string; fingerprint: string },
  options: EndpointOptions,
  exchange: (offer: string) => Promise<string>,
): Promise<{ channel: FrameChannel; setupMs: number }> {
  if (transport === 'werift') return offerWerift(exchange, options.maxMessage, MAX_FRAME_BYTES)
  if (transport === 'quic') return dialQuic(await quic(), to.endpoint, MAX_FRAME_BYTES)
  const started = performance.now()
  const channel = await connectWs(to.endpoint, to.fingerprint)
  return { channel, setupMs: performance.now() - started }
}

async function quic(): Promise<Quic> {
  const loaded = await loadQuic()
  if (typeof loaded === 'string') throw new Error(loaded)
  return loaded
}

/** Handles the parent's messages one by one; any failure is told, and ends this process. */
function serve(handle: (message: ToEndpoint) => Promise<void>): void {
  let queue = Promise.resolve()
  process.on('message', (raw) => {
    const message = raw as ToEndpoint
    if (message.kind === 'cpu') tell({ kind: 'cpu', micros: cpuMicros() })
    // the answer to an offer comes while 'connect' is still being handled: not behind it
    else if (message.kind === 'answer') handle(message).catch(fail)
    else queue = queue.then(() => handle(message)).catch(fail)
  })
}

/** Tells `message`, then ends this process once the message is on its way. */
function tellAndExit(message: FromEndpoint, code: number): void {
  if (process.send === undefined) process.exit(code)
  process.send(message, undefined, undefined, () => process.exit(code))
}

async function closeAndExit(close: () => Promise<void>): Promise<void> {
  await close()
  // QUIC's dialer keeps its UDP socket for the process's life: nothing else is left to wait for
  tellAndExit({ kind: 'closed' }, 0)
}

function fail(error: unknown): void {
  tellAndExit({ kind: 'failed', message: error instanceof Error ? (error.stack ?? error.message) : String(error) }, 1)
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const [role, transport, options] = process.argv.slice(2) as [Role, Transport, string]
  // an orphan (the bench ended or was killed) ends at once
  process.on('disconnect', () => process.exit(0))
  process.on('uncaughtException', fail)
  await (role === 'hop' ? hop : caller)(transport, JSON.parse(options) as EndpointOptions).catch(fail)
}
