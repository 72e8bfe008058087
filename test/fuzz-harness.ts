// The fuzz test's harness: who answered what (Findings), connections that survive being dropped,
// and the valid frames and raw packets the mutations start from. Used by test/fuzz.test.ts.

import type { Socket } from 'socket.io-client'
import WebSocket from 'ws'
import { forwardFrame } from '../dataplane/hop-frames'
import { connectTracker } from '../dataplane/tracker-connection'
import type { NodeIdentity } from '../identity/keys'
import { signOpen } from '../identity/tickets'
import {
  ClientToTracker,
  decodeFrame,
  f32ToF16,
  HostToTracker,
  jsonFrame,
  type Manifest,
  type RouteHop,
  type RpcSocket,
  readJson,
  WireError,
} from '../protocol'
import { below, mutate, pick, type Rng, randomBuffer, text } from './hostile-inputs'

/** An acknowledgement or a data-plane answer later than this counts as the peer not answering. */
export const ANSWER_MS = 15_000

/** What went wrong, kept short: the first few problems are enough to reproduce with the seed. */
export class Findings {
  readonly problems: string[] = []
  readonly codes = new Map<string, number>()
  add(problem: string): void {
    if (this.problems.length < 20) this.problems.push(problem.slice(0, 300))
  }
  count(code: string): void {
    this.codes.set(code, (this.codes.get(code) ?? 0) + 1)
  }
}

/** The answer a Socket.IO event got, judged: a typed acknowledgement, or a finding. */
export function judgeAck(findings: Findings, what: string, answer: unknown): void {
  const a = answer as { ok?: unknown; value?: unknown; error?: unknown }
  if (a?.ok === true && 'value' in a) {
    findings.count('ok')
    return
  }
  const error = WireError.safeParse(a?.error)
  if (a?.ok === false && error.success) {
    findings.count(error.data.code)
    if (error.data.code === 'internal') findings.add(`${what} hit an internal error: ${error.data.message}`)
    return
  }
  findings.add(`${what} got no typed acknowledgement: ${JSON.stringify(answer)?.slice(0, 200)}`)
}

export async function emitJudged(
  findings: Findings,
  socket: Socket,
  what: string,
  event: string,
  args: unknown[],
): Promise<void> {
  try {
    judgeAck(findings, what, await socket.timeout(ANSWER_MS).emitWithAck(event, ...args))
  } catch (error) {
    if (!socket.connected) return findings.count('disconnected')
    findings.add(`${what}: no answer within ${ANSWER_MS} ms (${error instanceof Error ? error.message : error})`)
  }
}

/** Authenticated sockets for one namespace and key, connected again whenever one is lost. */
export class AuthenticatedPool {
  private socket: Promise<Socket & RpcSocket> | undefined
  constructor(
    private readonly trackerUrl: string,
    private readonly namespace: '/clients' | '/hosts',
    readonly identity: NodeIdentity,
    private readonly onConnect: (s: Socket & RpcSocket) => Promise<void> = async () => {},
  ) {}
  async get(): Promise<Socket & RpcSocket> {
    const current = await this.socket?.catch(() => undefined)
    if (current?.connected) return current
    this.socket = connectTracker(this.trackerUrl, this.namespace, this.identity).then(async (s) => {
      await this.onConnect(s)
      return s
    })
    return this.socket
  }
  async close(): Promise<void> {
    ;(await this.socket?.catch(() => undefined))?.close()
  }
}

/** A data-plane connection to a host: one frame out, its one answer back, in turn. */
export class FrameConnection {
  private socket: Promise<WebSocket> | undefined
  private turn: Promise<unknown> = Promise.resolve()
  constructor(private readonly url: string) {}

  private open(): Promise<WebSocket> {
    const socket = new WebSocket(this.url, { maxPayload: 256 * 1024 * 1024 })
    socket.on('error', () => {})
    return new Promise((resolve, reject) => {
      socket.once('open', () => resolve(socket))
      socket.once('error', reject)
    })
  }

  /** The answer to `data`, or 'closed' when the host closed the connection instead (it is opened again next time). */
  exchange(data: Buffer | string): Promise<Buffer | 'closed'> {
    const run = this.turn.then(async () => {
      let socket = await this.socket?.catch(() => undefined)
      if (socket === undefined || socket.readyState !== WebSocket.OPEN) {
        this.socket = this.open()
        socket = await this.socket
      }
      const live = socket
      return new Promise<Buffer | 'closed'>((resolve, reject) => {
        const timer = setTimeout(
          () => done(() => reject(new Error(`the host did not answer within ${ANSWER_MS} ms`))),
          ANSWER_MS,
        )
        const onMessage = (reply: Buffer) => done(() => resolve(reply))
        const onClose = () => done(() => resolve('closed'))
        const done = (settle: () => void) => {
          clearTimeout(timer)
          live.off('message', onMessage)
          live.off('close', onClose)
          settle()
        }
        live.once('message', onMessage)
        live.once('close', onClose)
        live.send(data)
      })
    })
    this.turn = run.catch(() => undefined)
    return run
  }

  async close(): Promise<void> {
    ;(await this.socket?.catch(() => undefined))?.terminate()
  }
}

/** A host's answer, judged: a well-formed frame of an answering kind; an error names its code. */
export function judgeFrame(findings: Findings, what: string, reply: Buffer | Uint8Array | 'closed'): void {
  if (reply === 'closed') {
    findings.count('frame:closed')
    return
  }
  try {
    const frame = decodeFrame(reply)
    if (frame.kind === 'error') findings.count(`frame:${readJson(frame, WireError).code}`)
    else if (['ok', 'hidden', 'token'].includes(frame.kind)) findings.count(`frame:${frame.kind}`)
    else findings.add(`${what}: the host answered with a ${frame.kind} frame`)
  } catch (error) {
    findings.add(`${what}: the host's answer is not a frame (${error instanceof Error ? error.message : error})`)
  }
}

/** The valid frames of one hop of one session, for the fuzz to start from. */
export interface HopFrames {
  readonly hostId: string
  readonly session: string
  readonly open: { readonly body: Record<string, unknown>; readonly frame: Uint8Array }
  readonly forward: Uint8Array
  readonly close: Uint8Array
}

export function hopFrames(
  manifest: Pick<Manifest, 'modelId' | 'nEmbd'>,
  identity: NodeIdentity,
  hop: RouteHop,
  session: string,
  maxTokens: number,
  last: boolean,
): HopFrames {
  if (hop.ticket === undefined) throw new Error(`the tracker gave no ticket for ${hop.hostId}`)
  const body = {
    modelId: manifest.modelId,
    blocks: hop.blocks,
    maxTokens,
    ticket: hop.ticket,
    signature: signOpen(identity, hop.ticket, { blocks: hop.blocks, maxTokens }),
    hiddenDtype: 'f16',
    ...(last ? { sampling: { temperature: 0 } } : {}),
  }
  const first = hop.blocks[0] === 0
  const tokens = 3
  const payload = first
    ? new Uint8Array(Int32Array.of(1, 400, 7).buffer)
    : new Uint8Array(Uint16Array.from({ length: tokens * manifest.nEmbd }, (_, i) => f32ToF16(Math.sin(i) / 10)).buffer)
  const input = {
    dtype: first ? ('i32' as const) : ('f16' as const),
    tokens,
    width: first ? 1 : manifest.nEmbd,
    payload,
  }
  const forward = forwardFrame(input, 0, session, 1, 0, { identity, hostId: hop.hostId, blocks: hop.blocks })
  return {
    hostId: hop.hostId,
    session,
    open: { body, frame: jsonFrame('open', session, 0, body) },
    forward,
    close: jsonFrame('close', session, 1, {}),
  }
}

/** Raw Socket.IO packets, as a client library would never send them. */
export function rawPackets(rng: Rng, ns: string): (string | Buffer)[] {
  const deep = (n: number, inner = '0') => `${'['.repeat(n)}${inner}${']'.repeat(n)}`
  const event = pick(rng, [...Object.keys(ClientToTracker), ...Object.keys(HostToTracker), 'x'])
  switch (below(rng, 11)) {
    case 0:
      return [`2${ns},${below(rng, 1000)}["models.list",{}]`]
    case 1:
      return [`2${ns},${below(rng, 1000)}["${event}",${deep(pick(rng, [1000, 100_000, 500_000]))}]`]
    case 2:
      return [`2${ns},${text(rng, pick(rng, [1, 100, 10_000]))}`]
    case 3:
      return [
        `51-${ns},${below(rng, 1000)}` +
          '["route.plan",{"modelId":"stories260k","maxTokens":8,"span":{"_placeholder":true,"num":0}}]',
        Buffer.from('xx'),
      ]
    case 4:
      // Binary placeholders nested deep: rebuilding the packet recurses.
      return [`51-${ns},["${event}",${deep(200_000, '{"_placeholder":true,"num":0}')}]`, Buffer.from('x')]
    case 5:
      return [`52-${ns},1["model.publish",{"_placeholder":true,"num":7}]`, Buffer.alloc(1), `2${ns},["models.list",{}]`]
    case 6:
      return [`3${ns},${below(rng, 100)}[]`]
    case 7:
      return [`1${ns},`]
    case 8:
      return [`0${ns},{}`]
    case 9:
      return [randomBuffer(rng, 1 + below(rng, 64))]
    default:
      return [text(rng, below(rng, 200))]
  }
}

/** Engine.IO frames on a raw WebSocket: a Socket.IO connect with hostile auth, then events it may not send. */
export function engineFrames(rng: Rng, auth: unknown): (string | Buffer)[] {
  const ns = pick(rng, ['/clients', '/hosts', '/', '/nope'])
  const frames: (string | Buffer)[] = [`40${ns},${JSON.stringify(mutate(rng, auth)) ?? ''}`]
  for (let i = below(rng, 4); i >= 0; i--) {
    frames.push(
      pick(rng, [
        `42${ns},1["models.list",{}]`,
        `42${ns},["route.plan",{"modelId":"stories260k","maxTokens":8}]`,
        `4${rawPackets(rng, ns)[0]}`,
        pick(rng, ['2', '3', '5', '6', '1']),
        text(rng, below(rng, 300)),
        randomBuffer(rng, below(rng, 300)),
      ]),
    )
  }
  return frames
}
