// The test's side of ice-child.ts: a werift peer in a namespace of the test network, driven by JSON lines, and one
// pair's attempt at a data channel between two of them (vanilla ICE: offer, answer, then a frame each way).
import type { ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { REPO_ROOT } from '../models'
import type { HomeNetwork, Place } from '.'
import { waitForOutput } from './children'

const CHILD = join(REPO_ROOT, 'test/network/ice-child.ts')
/** How long a pair may take from the offerer taking the answer to a frame received each way: then it is recorded as
 * not connecting (ICE's own checks give up later). */
export const PAIR_TIMEOUT_MS = 10_000

/** What a peer printed about one connection (see ice-child.ts). */
export interface PeerReply {
  kind: 'offer' | 'answer' | 'result' | 'closed' | 'error'
  id: string
  sdp?: string
  gatherMs?: number
  connected?: boolean
  why?: string
  sent?: string
  received?: string
  iceState?: string
  /** Milliseconds from the connection's start to each ICE state, the channel open and the peer's frame. */
  marks?: Record<string, number>
  local?: { type: string; address: string }
  remote?: { type: string; address: string }
  checked?: string[]
  udpSockets?: number
  message?: string
}

/** The tracker's STUN server in `place`, on `port` of every address there; resolves once it answers. */
export async function startStunIn(net: HomeNetwork, place: Place, port: number): Promise<ChildProcess> {
  const child = net.spawnIn(place, process.execPath, ['--import', 'tsx', CHILD, 'stun', '0.0.0.0', String(port)])
  await waitForOutput(child, /stun ready/, `the STUN server in ${place}`, 30_000)
  return child
}

export class IcePeer {
  private readonly replies: PeerReply[] = []
  private readonly listeners = new Set<() => void>()
  private exited: string | undefined

  private constructor(
    readonly place: Place,
    private readonly child: ChildProcess,
  ) {
    let stderr = ''
    child.stderr?.on('data', (chunk: Buffer) => {
      stderr = (stderr + chunk.toString()).slice(-2000)
    })
    child.once('exit', (code) => {
      this.exited = `the peer in ${place} exited (${code}): ${stderr}`
      for (const wake of this.listeners) wake()
    })
    if (child.stdout === null) throw new Error('an ICE peer needs its stdout piped')
    createInterface({ input: child.stdout }).on('line', (line) => {
      try {
        this.replies.push(JSON.parse(line) as PeerReply)
      } catch {
        return // a line that is no reply (none is expected)
      }
      for (const wake of this.listeners) wake()
    })
  }

  /** A werift peer in `place` whose STUN server is `stunUrl` (stun:HOST:PORT). */
  static start(net: HomeNetwork, place: Place, stunUrl: string): IcePeer {
    const child = net.spawnIn(place, process.execPath, ['--import', 'tsx', CHILD, 'peer', place, stunUrl], {
      stdio: ['pipe', 'pipe', 'pipe'],
    })
    return new IcePeer(place, child)
  }

  send(command: { op: 'offer' | 'answer' | 'accept' | 'close'; id: string; sdp?: string; timeoutMs?: number }): void {
    this.child.stdin?.write(`${JSON.stringify(command)}\n`)
  }

  /**
   * The peer's next `kind` reply about connection `id` (taken: a later call waits for another); rejects on its error
   * about it, its exit, or after `timeoutMs`.
   */
  next(id: string, kind: PeerReply['kind'], timeoutMs: number): Promise<PeerReply> {
    return new Promise((resolve, reject) => {
      const check = () => {
        const error = this.replies.find((r) => r.id === id && r.kind === 'error')
        const at = this.replies.findIndex((r) => r.id === id && r.kind === kind)
        const found = this.replies[at]
        if (found !== undefined) finish(() => resolve(this.replies.splice(at, 1)[0] ?? found))
        else if (error !== undefined) finish(() => reject(new Error(`${this.place}, ${id}: ${error.message}`)))
        else if (this.exited !== undefined) finish(() => reject(new Error(this.exited)))
      }
      const timer = setTimeout(
        () => finish(() => reject(new Error(`${this.place} printed no ${kind} for ${id} in ${timeoutMs} ms`))),
        timeoutMs,
      )
      const finish = (settle: () => void) => {
        clearTimeout(timer)
        this.listeners.delete(check)
        settle()
      }
      this.listeners.add(check)
      check()
    })
  }

  /** Ends the peer: it closes what is open and exits. */
  stop(): void {
    this.child.stdin?.end()
  }
}

/** One pair's attempt, as both ends saw it. */
export interface PairOutcome {
  offerer: Place
  answerer: Place
  /** A frame crossed each way intact. */
  connected: boolean
  /** From the offerer taking the answer to its channel open, and to the answerer's frame received, ms. */
  openMs?: number
  frameMs?: number
  /** What each end's ICE chose as the other's candidate: "srflx 198.18.0.101:40123". */
  offererSaw?: string
  answererSaw?: string
  /** The candidate types each end offered: "host,srflx". */
  offered: { offerer: string; answerer: string }
  offerSdp: string
  answerSdp: string
  /** From each end's start to its description with every candidate gathered, ms. */
  gatherMs: { offerer?: number; answerer?: number }
  ends: { offerer: PeerReply; answerer: PeerReply }
  /** UDP sockets each end still held after closing. */
  leftOpen: number
}

/** Offer from `a`, answer from `b`, a frame each way, then both close: what happened. */
export async function connectPair(a: IcePeer, b: IcePeer, id = `${a.place}-${b.place}`): Promise<PairOutcome> {
  a.send({ op: 'offer', id, timeoutMs: PAIR_TIMEOUT_MS })
  const offer = await a.next(id, 'offer', 15_000)
  b.send({ op: 'answer', id, sdp: offer.sdp ?? '', timeoutMs: PAIR_TIMEOUT_MS })
  const answer = await b.next(id, 'answer', 15_000)
  a.send({ op: 'accept', id, sdp: answer.sdp ?? '' })
  const [atA, atB] = (await Promise.all([a, b].map((peer) => peer.next(id, 'result', PAIR_TIMEOUT_MS + 5_000)))) as [
    PeerReply,
    PeerReply,
  ]
  a.send({ op: 'close', id })
  b.send({ op: 'close', id })
  const closed = await Promise.all([a, b].map((peer) => peer.next(id, 'closed', 10_000)))
  const saw = (r: PeerReply) => (r.remote == null ? undefined : `${r.remote.type} ${r.remote.address}`)
  const types = (sdp: string | undefined) =>
    [...new Set((sdp ?? '').split('\r\n').flatMap((l) => / typ (\w+)/.exec(l)?.[1] ?? []))].join(',')
  return {
    offerer: a.place,
    answerer: b.place,
    connected:
      atA.connected === true && atB.connected === true && atA.received === atB.sent && atB.received === atA.sent,
    openMs: atA.marks?.open,
    frameMs: atA.marks?.frame,
    offererSaw: saw(atA),
    answererSaw: saw(atB),
    offered: { offerer: types(offer.sdp), answerer: types(answer.sdp) },
    offerSdp: offer.sdp ?? '',
    gatherMs: { offerer: offer.gatherMs, answerer: answer.gatherMs },
    answerSdp: answer.sdp ?? '',
    ends: { offerer: atA, answerer: atB },
    leftOpen: closed.reduce((sum, c) => sum + (c.udpSockets ?? 0), 0),
  }
}
