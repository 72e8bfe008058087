// Test helper for test/fuzz.test.ts: a valid payload of every event of the tracker's protocol, each made from the
// fuzz's own model, sessions and receipt, for the barrage to mutate.
import type { HardwareProfile, Manifest, Receipt, ServingState } from '../protocol'
import type { HopFrames } from './fuzz-harness'
import { auditOf, pick, type Rng, randomBuffer } from './hostile-inputs'

/** A session id: 16 random bytes, hex. */
export const sessionId = (rng: Rng) => randomBuffer(rng, 16).toString('hex')

/** What the payloads are made of. */
export type PayloadSources = {
  manifest: Manifest
  /** The model under another id, for model.publish. */
  fuzzModel: Manifest
  torrent: Buffer
  tokenizer: Buffer
  profile: HardwareProfile
  /** A host's ready state. */
  state: ServingState
  /** The frames of each hop of the fuzz's routed sessions. */
  routed: HopFrames[][]
  hostIds: string[]
  /** The first hop of the first session, whose step signed `receipt`. */
  firstHop: HopFrames
  receipt: Receipt | undefined
}
export type Payloads = Record<string, (rng: Rng) => unknown>

/** A payload of each /clients event (ClientToTracker). */
export function clientEventPayloads(sources: PayloadSources): Payloads {
  const { manifest, fuzzModel, torrent, tokenizer, profile, routed, hostIds, firstHop, receipt } = sources
  const hops = routed.flat()
  return {
    ping: () => ({}),
    'models.list': () => ({}),
    'model.get': () => ({ modelId: manifest.modelId }),
    'model.publish': () => ({ manifest: fuzzModel, torrent, tokenizer }),
    'model.tokenizer': () => ({ modelId: manifest.modelId }),
    'hosts.list': () => ({}),
    'route.plan': () => ({
      modelId: manifest.modelId,
      maxTokens: 64,
      session: routed[0]?.[0]?.session,
      exclude: [],
      span: [0, 2],
      nextHop: hostIds[1],
    }),
    // a conversation's next turn on a routed session, on its own hops (the fuzz mutates the turn and the hops)
    'route.turn': () => ({
      session: routed[0]?.[0]?.session,
      turn: { step: 3, position: 2, tokens: 4 },
      hops: (routed[0] ?? []).map((h) => ({ hostId: h.hostId, blocks: h.open.body.blocks })),
    }),
    'placement.preview': () => ({ modelId: manifest.modelId, profile }),
    'relay.forward': (rng) => {
      const hop = pick(rng, hops)
      return { hostId: hop.hostId, frame: Buffer.from(pick(rng, [hop.open.frame, hop.forward, hop.close])) }
    },
    // a description with no media: the host refuses it typed (bad_offer), or answers one no channel ever opens on
    'punch.open': (rng) => ({ hostId: pick(rng, hostIds), offer: 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\n' }),
    'receipts.submit': () => ({ session: firstHop.session, receipts: [receipt] }),
    'session.end': (rng) => ({ session: sessionId(rng) }),
    'account.balance': () => ({}),
    'stun.port': () => ({}),
    'latency.report': (rng) => ({ links: [{ hostId: pick(rng, hostIds), roundTripMs: [rng() * 100] }] }),
    'dashboard.subscribe': () => ({ hostIds }),
    'grant.challenge': () => ({}),
    'grant.claim': (rng) => ({
      challenge: `grant.${Date.now() + 60_000}.${sessionId(rng)}`,
      nonce: String(Math.floor(rng() * 1e9)),
    }), // never issued
    // bytes not its receipt's: refused, never re-run
    'audit.submit': () => auditOf(firstHop.session, receipt as NonNullable<typeof receipt>),
  }
}

/** A payload of each /hosts event (HostToTracker). */
export function hostEventPayloads(sources: PayloadSources): Payloads {
  const { manifest, profile, state, receipt, hostIds } = sources
  return {
    'host.hello': () => ({ profile, state }),
    'host.state': () => state,
    'host.heartbeat': () => ({ activeSessions: 1 }),
    'placement.request': () => ({ modelId: manifest.modelId }),
    'model.get': () => ({ modelId: manifest.modelId }),
    'receipts.submit': () => ({ receipts: [receipt] }),
    // a volunteer relay's, from a host that relays for none: refused, never paid
    'relay.receipts': () => ({ receipts: [receipt] }),
    'stun.port': () => ({}),
    // a host's offer to another (a hop-to-hop seam): refused typed, or answered with a channel that never opens
    'punch.open': (rng) => ({ hostId: pick(rng, hostIds), offer: 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=-\r\n' }),
  }
}
