import { describe, expect, it } from 'vitest'
import type { LanView, PairingView } from '../../../protocol/lan'
import { endedPairings, openPairings, pairingPrompt, peerRows, spacedCode } from './selectors'

const KEY_A = 'A'.repeat(43)
const KEY_B = 'B'.repeat(43)
const pairing = (change: Partial<PairingView>): PairingView => ({
  pairingId: 'p'.repeat(22),
  role: 'asked',
  peerKey: KEY_A,
  peerName: 'kitchen',
  code: '042917',
  state: 'code',
  confirmedHere: false,
  confirmedThere: false,
  expiresAt: 1000,
  message: null,
  ...change,
})
const peer = (key: string, name: string, paired = false) => ({
  key,
  hostId: key === KEY_A ? 'a'.repeat(20) : 'b'.repeat(20),
  name,
  address: '10.77.0.1',
  trackerPort: 7070,
  pairingPort: 7071,
  paired,
})
const view = (change: Partial<LanView>): LanView => ({
  open: true,
  advertising: true,
  problem: null,
  peers: [],
  pairings: [],
  paired: [],
  ...change,
})

describe('lan selectors', () => {
  it('offers to pair with an app only when it is neither paired nor pairing', () => {
    const rows = peerRows(
      view({ peers: [peer(KEY_A, 'kitchen'), peer(KEY_B, 'study', true)], pairings: [pairing({})] }),
    )
    expect(rows.map((r) => [r.name, r.state, r.canPair])).toEqual([
      ['kitchen', 'pairing…', false],
      ['study', 'paired', false],
    ])
    expect(
      peerRows(view({ peers: [peer(KEY_A, 'kitchen')], pairings: [pairing({ state: 'expired' })] }))[0],
    ).toMatchObject({ state: 'expired', canPair: true })
  })

  it('shows a code to compare only while it waits, and the latest ending per app that did not pair', () => {
    const v = view({
      pairings: [
        pairing({}),
        pairing({ peerKey: KEY_B, state: 'refused', message: 'refused' }),
        pairing({ peerKey: KEY_B, state: 'expired', expiresAt: 10 }),
      ],
    })
    expect(openPairings(v).map((p) => p.peerKey)).toEqual([KEY_A])
    expect(endedPairings(v).map((p) => p.state)).toEqual(['refused'])
    expect(endedPairings(view({ pairings: [pairing({ state: 'paired' })] }))).toEqual([])
  })

  it('says whose confirmation is awaited', () => {
    expect(pairingPrompt(pairing({}))).toBe(
      'kitchen asks to join this swarm. Confirm only if kitchen shows the same code.',
    )
    expect(pairingPrompt(pairing({ role: 'asking', confirmedHere: true }))).toBe(
      "Asking to join kitchen's swarm. Confirmed here; now confirm on kitchen.",
    )
    expect(spacedCode('042917')).toBe('042 917')
  })
})
