// What makes a home's router a NAT (and, for v6, a firewall): its nftables ruleset, one per kind of home.

/** How a home's router rewrites its computers' outbound connections. */
export type NatKind =
  /** Plain `masquerade`: a connection keeps its source port where it can, so hole punching works. */
  | 'port-preserving'
  /** `masquerade random,fully-random`: every connection gets a random port, so hole punching fails. */
  | 'port-randomising'
  /** Port-preserving, plus miniupnpd answering UPnP-IGD and NAT-PMP on the LAN (see upnp.ts). */
  | 'upnp'

export const WAN_IF = 'wan'
export const LAN_BRIDGE = 'br0'
/** A carrier NAT's interface toward its customers' routers. */
export const CUSTOMER_IF = 'cust'

/** What the ruleset depends on: the home's NAT, LAN, whether miniupnpd fills chains, and whether it has IPv6. */
export interface RouterPlan {
  readonly nat: NatKind
  readonly lan: string
  readonly miniupnpd: boolean
  readonly ipv6?: unknown
}

/**
 * Forwards LAN to internet and replies back; drops every other forwarded packet (so nothing from the
 * internet reaches a computer unless mapped). The router's own traffic is not rewritten, so
 * miniupnpd's STUN check sees its true port behaviour. Routers running miniupnpd get the chains it fills
 * (table and chain names match the config upnp.ts writes).
 *
 * Like a home router's firewall (OpenWrt's wan zone: input REJECT), it rejects what the internet sends
 * its own address unasked. Without that, such a packet left a conntrack entry (peer:port -> router:port,
 * to the router itself) whose reply tuple is the mapping the router would give its computer's packets to
 * that peer, so masquerade picked another port for them and hole punching between two homes failed
 * whenever the far side's first ICE check arrived first (test/network/ice-pairs.test.ts).
 *
 * IPv6 (a home with `ipv6`): the same `inet` forward chain is the v6 firewall. Nothing is masqueraded (the rule
 * names `ip saddr`), so computers keep their global addresses; new inbound v6 meets the policy drop unless
 * miniupnpd put a pinhole rule in its chain. ICMPv6 to the router itself is accepted: without neighbour discovery on
 * the WAN nothing v6 reaches it at all.
 */
export function routerRuleset(home: RouterPlan, insideIf = LAN_BRIDGE): string {
  const upnp = home.miniupnpd
  const masquerade = home.nat === 'port-randomising' ? 'masquerade random,fully-random' : 'masquerade'
  return `
table inet filter {
  chain forward {
    type filter hook forward priority 0; policy drop;
    ct state established,related accept
    iifname "${insideIf}" oifname "${WAN_IF}" accept
    ${upnp ? 'jump miniupnpd' : ''}
  }
  chain input {
    type filter hook input priority 0; policy accept;
    iifname "${WAN_IF}" ct state established,related accept
    ${home.ipv6 === undefined ? '' : `iifname "${WAN_IF}" meta l4proto ipv6-icmp accept`}
    iifname "${WAN_IF}" meta l4proto tcp reject with tcp reset
    iifname "${WAN_IF}" reject
  }
  ${upnp ? 'chain miniupnpd {\n  }' : ''}
}
table inet nat {
  chain prerouting {
    type nat hook prerouting priority -100; policy accept;
    ${upnp ? 'jump prerouting_miniupnpd' : ''}
  }
  chain postrouting {
    type nat hook postrouting priority 100; policy accept;
    ${upnp ? 'jump postrouting_miniupnpd' : ''}
    ip saddr ${home.lan} oifname "${WAN_IF}" ${masquerade}
  }
  ${upnp ? 'chain prerouting_miniupnpd {\n  }\n  chain postrouting_miniupnpd {\n  }' : ''}
}
`
}

/**
 * An ISP's carrier-grade NAT: its customers' routers (on `inside`, behind CUSTOMER_IF) out to the internet, ports kept
 * where free, replies back, nothing else forwarded, and what the internet sends it unasked rejected: a home router's
 * ruleset with no miniupnpd and no IPv6, its LAN the customer network.
 */
export function carrierRuleset(inside: string): string {
  return routerRuleset({ nat: 'port-preserving', lan: inside, miniupnpd: false }, CUSTOMER_IF)
}
