import { z } from 'zod'
import { NodeId, PublicKey } from './identity'

/*
 * Apps on one home network: what they advertise by mDNS/DNS-SD, and the pairing wire between two of
 * them (HTTP JSON, served by the app that opened its swarm). Both apps parse every message with these.
 */

/** DNS-SD service type `_neuron._tcp`. */
export const LAN_SERVICE_TYPE = 'neuron'
/** A pending pairing lapses after this long on both sides; the users start again. */
export const PAIRING_TTL_MS = 60_000
/** A pairing message's body, bytes: the largest is under 300. */
export const MAX_PAIRING_BODY_BYTES = 4096
/** Pairings one app holds open at once: a person pairs one computer at a time. */
export const MAX_PENDING_PAIRINGS = 8
/**
 * Pairings one address may have waiting at once, unless it is an app this one found on the network: a flood from one
 * address holds this many, never the whole book.
 */
export const MAX_PENDING_PER_ADDRESS = 2

const Port = z.number().int().min(1).max(65_535)
const PortText = z.coerce.number().pipe(Port)
/** What a person calls the computer (its hostname), as shown in lists. */
export const LanName = z.string().min(1).max(63)
/** 32 random bytes, hex. */
export const PairingNonce = z.string().regex(/^[0-9a-f]{64}$/, 'a pairing nonce is 32 bytes, hex')
export const PairingId = z.string().regex(/^[A-Za-z0-9_-]{22}$/, 'a pairing id is 16 bytes, base64url')
/** Six digits, shown on both screens. */
export const PairingCode = z.string().regex(/^\d{6}$/)
const Signature = z.string().regex(/^[A-Za-z0-9_-]{86}$/, 'an ed25519 signature is 64 bytes, base64url')

/** The TXT record of an app's advertisement (DNS-SD TXT values are strings). */
export const LanTxt = z.object({ id: NodeId, key: PublicKey, name: LanName, port: PortText, pair: PortText })
export type LanTxt = z.infer<typeof LanTxt>

/** 1. The asking app (B) introduces itself; the asked app (A) answers with its key and a commitment to its nonce. */
export const PairHello = z.object({ key: PublicKey, name: LanName }).strict()
export const PairHelloReply = z.object({
  pairingId: PairingId,
  key: PublicKey,
  commitment: z.string().regex(/^[0-9a-f]{64}$/),
  expiresAt: z.number(),
})
/**
 * 2. B sends its nonce; A reveals its own. Only now can either compute the code, and A is bound to its nonce already.
 */
export const PairNonce = z.object({ pairingId: PairingId, nonce: PairingNonce }).strict()
export const PairNonceReply = z.object({ nonce: PairingNonce })
/** 3. B's user confirmed: B signs the code it shows, so A learns both that B holds its key and that the codes match. */
export const PairConfirm = z.object({ pairingId: PairingId, signature: Signature }).strict()
/** B asks how the pairing stands (every second until it is settled), or refuses it. */
export const PairAsk = z.object({ pairingId: PairingId }).strict()

export const PairingState = z.enum(['code', 'paired', 'refused', 'expired', 'failed'])
export type PairingState = z.infer<typeof PairingState>
/** A's answer to confirm, status and refuse; trackerPort: where B joins once paired. */
export const PairStatusReply = z.object({ state: PairingState, confirmedByAsked: z.boolean(), trackerPort: Port })
export type PairStatusReply = z.infer<typeof PairStatusReply>

/** The message B signs to confirm: names the pairing and the code, so it confirms nothing else. */
export function pairingConfirmMessage(pairingId: string, code: string): string {
  return `neuron-pair/1 confirm ${pairingId} ${code}`
}

/** One pairing as either screen shows it. */
export const PairingView = z.object({
  pairingId: PairingId,
  /** asking: this app asked to join the other's swarm; asked: the other asks to join this one's. */
  role: z.enum(['asking', 'asked']),
  peerKey: PublicKey,
  peerName: LanName,
  /** null until both nonces are known. */
  code: PairingCode.nullable(),
  state: PairingState,
  confirmedHere: z.boolean(),
  confirmedThere: z.boolean(),
  expiresAt: z.number(),
  /** Why it failed, refused or expired, and what to do; null while it goes well. */
  message: z.string().nullable(),
})
export type PairingView = z.infer<typeof PairingView>

/** A Neuron app found on the network. */
export const LanPeer = z.object({
  key: PublicKey,
  hostId: NodeId,
  name: LanName,
  /** Where it answered, IPv4 preferred. */
  address: z.string().max(64),
  trackerPort: Port,
  pairingPort: Port,
  /** Already paired with this app (either way). */
  paired: z.boolean(),
})
export type LanPeer = z.infer<typeof LanPeer>

export const PairedApp = z.object({ key: PublicKey, name: LanName, role: z.enum(['asking', 'asked']), at: z.number() })
export type PairedApp = z.infer<typeof PairedApp>

export const LanView = z.object({
  /** The Settings switch: the embedded swarm is open to the home network. */
  open: z.boolean(),
  /** This app is advertised now (switch on, and on its embedded swarm). */
  advertising: z.boolean(),
  /** Why discovery or advertising does not work (no multicast, a port taken), and what to do; null: it works. */
  problem: z.string().nullable(),
  peers: z.array(LanPeer).max(256),
  pairings: z.array(PairingView).max(64),
  paired: z.array(PairedApp).max(1000),
})
export type LanView = z.infer<typeof LanView>
