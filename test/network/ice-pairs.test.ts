// Which computers of test/network open a werift data channel to each other by ICE, with the tracker's STUN server
// (tracker/reachability/stun-server.ts) in the cloud: issue 39's hole punching, measured on real NAT routers.
//
// Each peer is a process in its namespace (ice-child.ts) with `iceServers: [stun:198.18.0.10:3478]` and IPv4 only;
// offers and answers are vanilla ICE (every candidate in the SDP). What this network does, measured:
// - home A (port-preserving masquerade) and home C (the same, plus miniupnpd, which ICE does not ask) punch through
//   to each other: each offers its host candidate and a srflx one, its router's WAN address with the same port
//   (Linux masquerade keeps a source port it can), and each side's checks to the other's srflx open the mapping that
//   lets the other's in (conntrack matches them as replies). ICE picks srflx at both ends.
// - A or C and the laptop (no NAT): the laptop's checks reach A's srflx once A's checks to the laptop have gone out;
//   A sees the laptop's host candidate, the laptop sees A's srflx.
// - home B (`masquerade random,fully-random`) and the laptop: B's router gives each destination another port, so
//   B's srflx (the port it got toward the STUN server) is useless, but B's checks reach the laptop from a new port,
//   which the laptop learns as peer-reflexive (prflx) and answers; the channel opens.
// - B and A, B and C: no. B's checks leave from a port neither A nor C was told, and their routers drop them
//   (conntrack filters on the remote port too); their checks go to B's srflx, a port B's router keeps for the STUN
//   server alone. Only a relay joins B to another NAT (the tracker's or a volunteer's).
// - hostA and peerA (one home, one LAN): host candidates, directly.
// - home D (randomising for IPv4, as B) against the laptop: as B; against B (two randomising routers), A or C: no.
// - home E, behind its ISP's carrier NAT as well as its own router (both keep ports, both filter as conntrack does):
//   as A, its srflx the carrier's address with its computer's own port, through both NATs; not with B or D.
// With routers whose own stack accepts unsolicited packets (this network before routers.ts's input chain), A and C
// connected in 1 try of 12 (A or C offering): the answerer's first check reached the offerer's router before the
// offerer's first check left, left a conntrack entry (C:port -> routerA:port, to the router itself), and masquerade
// then mapped the offerer's checks to another port (seen in /proc/net/nf_conntrack). Real home routers reject such
// packets, as these now do: then 8 tries of 8 connected.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildHomeNetwork, type HomeNetwork, type Place, whyNoNamespaces } from '.'
import { connectPair, IcePeer, type PairOutcome, startStunIn } from './ice-peers'

const why = whyNoNamespaces()
const STUN_PORT = 3478
const NAT_AND_LAPTOP = ['hostA', 'hostB', 'hostC', 'hostD', 'hostE', 'laptop'] as const
type Peer = (typeof NAT_AND_LAPTOP)[number] | 'peerA'

/** The candidate (type, address) each end is expected to choose for the other, or null: no channel within 10 s. */
type Expected = { offererSees: [string, string]; answererSees: [string, string] } | null

describe.skipIf(why !== undefined)(
  `werift data channels between homes, the tracker's STUN server in the cloud${why ? ` (skipped: ${why})` : ''}`,
  () => {
    let net: HomeNetwork
    const peers = new Map<Place, IcePeer>()
    const outcomes: PairOutcome[] = []
    beforeAll(async () => {
      net = await buildHomeNetwork()
      await startStunIn(net, 'cloud', STUN_PORT)
      for (const place of [...NAT_AND_LAPTOP, 'peerA'] as const)
        peers.set(place, IcePeer.start(net, place, `stun:${net.addresses.cloud}:${STUN_PORT}`))
    }, 120_000)
    afterAll(async () => {
      console.log(
        JSON.stringify(
          outcomes.map((o) => ({
            pair: `${o.offerer}-${o.answerer}`,
            connected: o.connected,
            gatherMs: [o.gatherMs.offerer, o.gatherMs.answerer],
            iceMs: o.ends.offerer.marks?.['ice connected'],
            openMs: o.openMs,
            frameMs: o.frameMs,
            offererSaw: o.offererSaw,
            answererSaw: o.answererSaw,
          })),
        ),
      )
      for (const peer of peers.values()) peer.stop()
      await net?.close()
    })

    const expected = (a: Peer, b: Peer): Expected => {
      // where each computer's packets come from on the internet
      const wan: Record<Peer, Place> = {
        hostA: 'routerA',
        peerA: 'routerA',
        hostB: 'routerB',
        hostC: 'routerC',
        hostD: 'routerD',
        hostE: 'carrierE',
        laptop: 'laptop',
      }
      // a router that gives each destination another port: only a peer with no NAT learns where its checks come from
      const randomising = (p: Peer) => p === 'hostB' || p === 'hostD'
      if (a === 'hostA' && b === 'peerA') return { offererSees: ['host', 'peerA'], answererSees: ['host', 'hostA'] }
      if (randomising(a) && b === 'laptop') return { offererSees: ['host', 'laptop'], answererSees: ['prflx', wan[a]] }
      if (randomising(a) || randomising(b)) return null
      if (a === 'laptop' || b === 'peerA') throw new Error(`no expectation for ${a}-${b}`)
      return b === 'laptop'
        ? { offererSees: ['host', 'laptop'], answererSees: ['srflx', wan[a]] }
        : { offererSees: ['srflx', wan[b]], answererSees: ['srflx', wan[a]] }
    }
    const pairs = [
      ...NAT_AND_LAPTOP.flatMap((a, i) => NAT_AND_LAPTOP.slice(i + 1).map((b) => [a, b] as [Peer, Peer])),
      ['hostA', 'peerA'] as [Peer, Peer],
    ]

    it.each(pairs)(
      '%s offers, %s answers: connected as the NATs between them allow',
      async (a, b) => {
        const outcome = await connectPair(peers.get(a) as IcePeer, peers.get(b) as IcePeer)
        outcomes.push(outcome)
        const want = expected(a, b)
        const context = JSON.stringify(outcome, null, 1)
        // every computer behind a router learned its router's address from the tracker's STUN server
        for (const [place, offered] of [
          [a, outcome.offered.offerer],
          [b, outcome.offered.answerer],
        ] as const)
          expect(offered, `${place}'s candidates\n${context}`).toBe('host,srflx')
        expect(outcome.connected, context).toBe(want !== null)
        if (want !== null) {
          const at = (place: string) => net.addresses[place as Place]
          expect(outcome.offererSaw, context).toMatch(new RegExp(`^${want.offererSees[0]} ${at(want.offererSees[1])}:`))
          expect(outcome.answererSaw, context).toMatch(
            new RegExp(`^${want.answererSees[0]} ${at(want.answererSees[1])}:`),
          )
          expect(outcome.openMs, context).toBeLessThan(5_000)
        }
        expect(outcome.leftOpen, `UDP sockets left open\n${context}`).toBe(0)
      },
      60_000,
    )

    it('maps a home A or C computer to its own port, and home B’s to another port per destination', () => {
      const pair = (a: string, b: string) => outcomes.find((o) => o.offerer === a && o.answerer === b)
      const srflx = (sdp: string | undefined) => / (\d+) typ srflx raddr \S+ rport (\d+)/.exec(sdp ?? '')
      const aToLaptop = pair('hostA', 'laptop')
      const bToLaptop = pair('hostB', 'laptop')
      const [, aSrflx, aHost] = srflx(aToLaptop?.offerSdp) ?? []
      expect(aSrflx).toBe(aHost)
      // B's srflx port is the one its router gave the STUN server; the laptop saw B's checks from another
      const [, bSrflx] = srflx(bToLaptop?.offerSdp) ?? []
      expect(bSrflx).toMatch(/^\d+$/)
      expect(bToLaptop?.answererSaw).not.toContain(`:${bSrflx}`)
    })
  },
)
