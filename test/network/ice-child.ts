// A werift peer (or the tracker's STUN server) run inside a namespace of the test network, for ice-pairs.test.ts.
// Usage: node --import tsx test/network/ice-child.ts stun HOST PORT
//        node --import tsx test/network/ice-child.ts peer PLACE STUN_URL
// A peer reads one JSON command a line on stdin and prints one JSON line per reply, each naming the pair it is about:
//   {"op":"offer","id","timeoutMs"}        -> {"kind":"offer","id","sdp","gatherMs"}   a connection with a channel
//   {"op":"answer","id","sdp","timeoutMs"} -> {"kind":"answer","id","sdp","gatherMs"}  one answering that offer
//   {"op":"accept","id","sdp"}             the offerer takes the answer
//   then, once per connection              -> {"kind":"result","id","connected",...} a frame each way, or why not
//                                             within timeoutMs of its start (answer printed; answer taken)
//   {"op":"close","id"}                    -> {"kind":"closed","id","udpSockets"}      UDP sockets still held
// Vanilla ICE: an offer or answer is printed once gathering is complete, so its SDP carries every candidate.
import { createHash, randomBytes } from 'node:crypto'
import { createInterface } from 'node:readline'
import { CandidatePairState, type RTCDataChannel, RTCPeerConnection, type RTCPeerConnectionConfig } from 'werift'
import { StunServer } from '../../tracker/reachability/stun-server'

const FRAME_BYTES = 4096

const say = (line: Record<string, unknown>) => process.stdout.write(`${JSON.stringify(line)}\n`)
const sha256 = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex').slice(0, 16)
const udpSockets = () => process.getActiveResourcesInfo().filter((r) => r === 'UDPWrap').length
const [command, ...args] = process.argv.slice(2)

if (command === 'stun') {
  const [host = '0.0.0.0', port = '3478'] = args
  const server = await StunServer.listen(Number(port), host)
  say({ kind: 'stun ready', port: server.port })
  process.stdin.resume()
  process.stdin.once('end', () => void server.close())
} else if (command === 'peer') {
  const [place = '', stunUrl = ''] = args
  servePeer(place, {
    iceServers: [{ urls: stunUrl }],
    // the test network is IPv4 only; a namespace's IPv6 is link-local, which werift skips anyway
    iceUseIpv6: false,
  })
} else throw new Error(`unknown command ${command}: stun HOST PORT or peer PLACE STUN_URL`)

interface Command {
  op: 'offer' | 'answer' | 'accept' | 'close'
  id: string
  sdp?: string
  timeoutMs?: number
}

function servePeer(place: string, config: Partial<RTCPeerConnectionConfig>): void {
  const connections = new Map<string, { pc: RTCPeerConnection; timeoutMs: number; channel?: RTCDataChannel }>()
  const run = async (c: Command) => {
    if (c.op === 'offer') {
      const pc = new RTCPeerConnection(config)
      const channel = pc.createDataChannel('probe', { ordered: true })
      connections.set(c.id, { pc, channel, timeoutMs: c.timeoutMs ?? 10_000 })
      const started = performance.now()
      await pc.setLocalDescription(await pc.createOffer())
      await gathered(pc)
      say({ kind: 'offer', id: c.id, sdp: pc.localDescription?.sdp, gatherMs: ms(started) })
    } else if (c.op === 'answer') {
      const pc = new RTCPeerConnection(config)
      connections.set(c.id, { pc, timeoutMs: c.timeoutMs ?? 10_000 })
      const channel = pc.onDataChannel.asPromise().then(([dc]) => dc)
      const started = performance.now()
      await pc.setRemoteDescription({ type: 'offer', sdp: c.sdp ?? '' })
      await pc.setLocalDescription(await pc.createAnswer())
      await gathered(pc)
      say({ kind: 'answer', id: c.id, sdp: pc.localDescription?.sdp, gatherMs: ms(started) })
      // its checks can succeed only once the offerer has this answer
      void exchange(c.id, place, pc, channel, c.timeoutMs ?? 10_000)
    } else if (c.op === 'accept') {
      const connection = connections.get(c.id)
      if (connection?.channel === undefined) throw new Error(`no offer ${c.id} to accept an answer for`)
      // the offerer's clock starts as it takes the answer, which starts its checks
      void exchange(c.id, place, connection.pc, Promise.resolve(connection.channel), connection.timeoutMs)
      await connection.pc.setRemoteDescription({ type: 'answer', sdp: c.sdp ?? '' })
    } else if (c.op === 'close') {
      await connections.get(c.id)?.pc.close()
      connections.delete(c.id)
      // werift closes its UDP sockets a moment after close() resolves
      for (let waited = 0; connections.size === 0 && udpSockets() > 0 && waited < 2000; waited += 50) await sleep(50)
      say({ kind: 'closed', id: c.id, udpSockets: udpSockets(), stillOpen: connections.size })
    }
  }
  const lines = createInterface({ input: process.stdin })
  lines.on('line', (line) => {
    let c: Command
    try {
      c = JSON.parse(line) as Command
    } catch {
      return say({ kind: 'error', id: '', message: `not JSON: ${line.slice(0, 80)}` })
    }
    run(c).catch((e: Error) => say({ kind: 'error', id: c.id, message: e.message }))
  })
  lines.once('close', async () => {
    await Promise.all([...connections.values()].map(({ pc }) => pc.close()))
    process.exit(0)
  })
}

/** Sends a frame on the channel once open and waits for the peer's; prints the result, or why not, within timeoutMs. */
async function exchange(
  id: string,
  place: string,
  pc: RTCPeerConnection,
  channel: Promise<RTCDataChannel>,
  timeoutMs: number,
) {
  const started = performance.now()
  const marks: Record<string, number> = {}
  pc.iceConnectionStateChange.subscribe((state) => {
    marks[`ice ${state}`] ??= ms(started)
  })
  const frame = randomBytes(FRAME_BYTES)
  const outcome: Promise<Buffer | string> = (async () => {
    const dc = await channel
    if (dc.readyState !== 'open') await dc.stateChanged.watch((s) => s === 'open')
    marks.open = ms(started)
    const received = dc.onMessage.asPromise()
    dc.send(frame)
    const [message] = await received
    marks.frame = ms(started)
    return typeof message === 'string' ? Buffer.from(message) : message
  })().catch((e: Error) => `the channel failed: ${e.message}`)
  const failed = pc.iceConnectionStateChange
    .watch((s) => s === 'failed')
    .then(
      () => 'ICE failed',
      () => 'closed before connecting',
    )
  const timedOut = sleep(timeoutMs).then(() => `no frame each way within ${timeoutMs} ms`)
  const first = await Promise.race([outcome, failed, timedOut])
  const connection = pc.iceTransports[0]?.connection
  const pairs = connection?.candidatePairs ?? []
  // the pair ICE chose: nominated, else (the controlled side, before USE-CANDIDATE) the first that succeeded
  const chosen = connection?.nominated ?? pairs.find((p) => p.state === CandidatePairState.SUCCEEDED)
  const end = (c: { type: string; host: string; port: number } | undefined) =>
    c && { type: c.type, address: `${c.host}:${c.port}` }
  say({
    kind: 'result',
    id,
    place,
    connected: Buffer.isBuffer(first),
    why: Buffer.isBuffer(first) ? undefined : first,
    sent: sha256(frame),
    received: Buffer.isBuffer(first) ? sha256(first) : undefined,
    iceState: pc.iceConnectionState,
    marks,
    // werift pairs remote candidates with its host sockets only, so `local` is always its host candidate
    local: end(chosen?.localCandidate),
    remote: end(chosen?.remoteCandidate),
    checked: pairs.map(
      (p) =>
        `${p.localCandidate.host}:${p.localCandidate.port} -> ${p.remoteCandidate.type} ` +
        `${p.remoteCandidate.host}:${p.remoteCandidate.port} ${CandidatePairState[p.state]}`,
    ),
  })
}

/** Resolves once `pc` has gathered every candidate (at once if it already has). */
async function gathered(pc: RTCPeerConnection): Promise<void> {
  if (pc.iceGatheringState === 'complete') return
  await pc.iceGatheringStateChange.watch((s) => s === 'complete', 15_000)
}

const ms = (since: number) => Math.round(performance.now() - since)
function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref())
}
