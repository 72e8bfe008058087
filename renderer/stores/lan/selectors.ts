import type { LanPeer, LanView, PairingView } from '../../../protocol/lan'
import { shortId } from '../../format'

export interface PeerRow {
  key: string
  name: string
  shortId: string
  address: string
  /** What the row says of pairing with it. */
  state: string
  /** The user may ask to join its swarm: advertised, not paired, no pairing under way with it. */
  canPair: boolean
}

/** The pairing under way with `key`, the latest first. */
function pairingWith(view: LanView, key: string): PairingView | undefined {
  return view.pairings.filter((p) => p.peerKey === key).sort((a, b) => b.expiresAt - a.expiresAt)[0]
}

export function peerRow(view: LanView, peer: LanPeer): PeerRow {
  const pairing = pairingWith(view, peer.key)
  const waiting = pairing?.state === 'code'
  const state = peer.paired ? 'paired' : waiting ? 'pairing…' : pairing !== undefined ? pairing.state : 'not paired'
  return {
    key: peer.key,
    name: peer.name,
    shortId: shortId(peer.hostId),
    address: peer.address,
    state,
    canPair: !peer.paired && !waiting,
  }
}

export function peerRows(view: LanView): PeerRow[] {
  return view.peers.map((peer) => peerRow(view, peer))
}

/** Pairings that wait for this user: a code to compare, not confirmed here yet or waiting for the other side. */
export function openPairings(view: LanView): PairingView[] {
  return view.pairings.filter((p) => p.state === 'code' && p.code !== null)
}

/** How a pairing ended, for the note under the list; only the latest per app, and not the ones that worked. */
export function endedPairings(view: LanView): PairingView[] {
  const latest = new Map<string, PairingView>()
  for (const p of view.pairings) if ((latest.get(p.peerKey)?.expiresAt ?? -1) < p.expiresAt) latest.set(p.peerKey, p)
  return [...latest.values()].filter((p) => p.state !== 'code' && p.state !== 'paired')
}

/** The line beside a code: who asks whom, and whose confirmation is awaited. */
export function pairingPrompt(p: PairingView): string {
  const ask = p.role === 'asked' ? `${p.peerName} asks to join this swarm.` : `Asking to join ${p.peerName}'s swarm.`
  if (!p.confirmedHere) return `${ask} Confirm only if ${p.peerName} shows the same code.`
  return p.confirmedThere ? `${ask} Both confirmed; finishing…` : `${ask} Confirmed here; now confirm on ${p.peerName}.`
}

/** Six digits as two groups of three, as they are read aloud. */
export function spacedCode(code: string): string {
  return `${code.slice(0, 3)} ${code.slice(3)}`
}
