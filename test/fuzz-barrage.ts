// Test helper for test/fuzz.test.ts: the barrage's messages, each kind of hostile input sent and its outcome judged.
import { io } from 'socket.io-client'
import WebSocket from 'ws'
import { connectTracker } from '../dataplane/tracker-connection'
import { NodeIdentity } from '../identity/keys'
import { AuthChallenge, ClientToTracker, HostToTracker, jsonFrame } from '../protocol'
import {
  type AuthenticatedPool,
  emitJudged,
  engineFrames,
  Findings,
  type FrameConnection,
  type HopFrames,
  judgeFrame,
  rawPackets,
} from './fuzz-harness'
import type { Payloads } from './fuzz-payloads'
import { below, copy, hostileValue, mutate, mutateFrame, pick, randomBuffer, seededRng, text } from './hostile-inputs'

/** What the barrage is made of, and each kind's share of it. */
const KINDS = [
  ['client', 0.34], // a /clients event of the protocol, mutated, from an authenticated client
  ['host', 0.14], // a /hosts event, mutated, from an authenticated host
  ['unknown', 0.06], // an event name neither namespace serves
  ['raw', 0.03], // malformed Socket.IO packets on an authenticated connection
  ['unauth-connect', 0.03], // a Socket.IO connect with mutated auth, and an event sent before it
  ['unauth-raw', 0.05], // Engine.IO frames on a raw WebSocket that never authenticated
  ['frame', 0.25], // a data-plane frame mutated from the fuzzer's own valid sessions' frames
  ['frame-rough', 0.1], // random bytes, text and oversized frames on a data-plane connection
] as const
type Kind = (typeof KINDS)[number][0]

function kindOf(roll: number): Kind {
  let upTo = 0
  for (const [kind, share] of KINDS) {
    upTo += share
    if (roll < upTo) return kind
  }
  return 'frame-rough'
}

/** Event names neither namespace serves: made up, Object.prototype's, the tracker's own pushes, empty, huge. */
const UNKNOWN_EVENTS = [
  'no.such.event',
  '__proto__',
  'constructor',
  'toString',
  'hasOwnProperty',
  'relay.frame',
  'dashboard.receipt',
  '',
  'x'.repeat(70_000),
]

/** Where the barrage goes, and the valid inputs it mutates. */
export type BarrageTargets = {
  seed: number
  trackerUrl: string
  /** Authenticated /clients connections, and /hosts connections of three hosts that said hello. */
  clients: AuthenticatedPool
  hostPools: AuthenticatedPool[]
  clientPayloads: Payloads
  hostPayloads: Payloads
  /** The frames of every hop of the fuzz's own sessions. */
  hops: HopFrames[]
  hostIds: string[]
  /** Per host: a connection that owns the fuzz's sessions (only mutations of valid frames), and one for rough input. */
  owners: Map<string, FrameConnection>
  roughs: Map<string, FrameConnection>
}

/** The hostile messages, each sent on its own; what came back that should not have is kept in `findings`. */
export class Barrage {
  readonly findings = new Findings()
  /** Messages sent, by kind. */
  readonly sent = new Map<string, number>()
  private readonly oversized = new Set<string>()

  constructor(private readonly targets: BarrageTargets) {}

  /** Message `i`: its kind and content come from its own PRNG, so the inputs do not depend on timing. */
  async send(i: number): Promise<void> {
    const { seed, trackerUrl, clients, hostPools, clientPayloads, hostPayloads, hops, hostIds, owners, roughs } =
      this.targets
    const { findings, sent, oversized } = this
    const rng = seededRng((seed ^ Math.imul(i + 1, 0x9e3779b1)) >>> 0)
    const kind = kindOf(rng())
    sent.set(kind, (sent.get(kind) ?? 0) + 1)
    switch (kind) {
      case 'client':
      case 'host': {
        const payloads = kind === 'client' ? clientPayloads : hostPayloads
        const event = pick(rng, Object.keys(payloads))
        const valid = payloads[event]?.(rng)
        const payload = rng() < 0.1 ? copy(valid) : mutate(rng, valid)
        const socket = kind === 'client' ? await clients.get() : await pick(rng, hostPools).get()
        const shape = rng()
        if (shape < 0.05) socket.emit(event, payload)
        else if (shape < 0.1) await emitJudged(findings, socket, `${kind} ${event} (no payload)`, event, [])
        else if (shape < 0.15)
          await emitJudged(findings, socket, `${kind} ${event} (extra arguments)`, event, [payload, hostileValue(rng)])
        else await emitJudged(findings, socket, `${kind} ${event}`, event, [payload])
        return
      }
      case 'unknown': {
        const socket = rng() < 0.5 ? await clients.get() : await pick(rng, hostPools).get()
        const event = pick(rng, [...UNKNOWN_EVENTS, text(rng, 1 + below(rng, 40))])
        await emitJudged(findings, socket, 'unknown event', event, [hostileValue(rng)])
        return
      }
      case 'raw': {
        // A connection of its own: a malformed packet makes the server close it.
        const ns = pick(rng, ['/clients', '/hosts'] as const)
        const socket = await connectTracker(trackerUrl, ns, NodeIdentity.generate())
        try {
          // The engine wraps each in an Engine.IO message; the packet itself is Socket.IO's encoding.
          for (const packet of rawPackets(rng, ns)) socket.io.engine.write(packet)
          await new Promise((r) => setTimeout(r, 20))
        } finally {
          socket.close()
        }
        return
      }
      case 'unauth-connect': {
        const ns = pick(rng, ['/clients', '/hosts'] as const)
        const challenge = AuthChallenge.parse(await (await fetch(`${trackerUrl}/auth/challenge`)).json())
        const auth = NodeIdentity.generate().answer(ns, challenge)
        const socket = io(`${trackerUrl}${ns}`, {
          auth: mutate(rng, auth) as object,
          transports: ['websocket'],
          reconnection: false,
          forceNew: true,
          timeout: 5000,
        })
        try {
          socket.emit(pick(rng, [...Object.keys(ClientToTracker), ...Object.keys(HostToTracker)]), hostileValue(rng))
          await new Promise((resolve) => {
            socket.once('connect', () => resolve('connect'))
            socket.once('connect_error', resolve)
            socket.io.once('close', resolve)
            setTimeout(resolve, 5000)
          })
        } finally {
          socket.close()
        }
        return
      }
      case 'unauth-raw': {
        const socket = new WebSocket(`${trackerUrl.replace('http', 'ws')}/socket.io/?EIO=4&transport=websocket`)
        socket.on('error', () => {})
        try {
          await new Promise((resolve) => {
            socket.once('open', resolve)
            socket.once('close', resolve)
          })
          const auth = { publicKey: 'A'.repeat(43), nonce: 'n'.repeat(32), signature: 'S'.repeat(86) }
          for (const frame of engineFrames(rng, auth)) if (socket.readyState === WebSocket.OPEN) socket.send(frame)
          await new Promise((r) => setTimeout(r, 20))
        } finally {
          socket.terminate()
        }
        return
      }
      case 'frame': {
        const hop = pick(rng, hops)
        const base = pick(rng, [hop.open.frame, hop.forward, hop.forward, hop.close])
        const roll2 = rng()
        const frame =
          roll2 < 0.15
            ? Buffer.from(base)
            : roll2 < 0.4
              ? Buffer.from(jsonFrame('open', hop.session, 0, mutate(rng, hop.open.body)))
              : mutateFrame(rng, base)
        judgeFrame(findings, 'frame', (await owners.get(hop.hostId)?.exchange(frame)) ?? 'closed')
        return
      }
      default: {
        const hostId = pick(rng, hostIds)
        const connection = roughs.get(hostId)
        // Once per host, a frame past the host's frame limit (32 MiB): a typed refusal, then the host carries on.
        const data = !oversized.has(hostId)
          ? Buffer.alloc(32 * 1024 * 1024 + 1)
          : pick(rng, [
              () => randomBuffer(rng, below(rng, 4096)),
              () => text(rng, below(rng, 2000)),
              () => mutateFrame(rng, mutateFrame(rng, pick(rng, hops).forward)),
            ])()
        oversized.add(hostId)
        judgeFrame(findings, 'rough frame', (await connection?.exchange(data)) ?? 'closed')
      }
    }
  }
}
