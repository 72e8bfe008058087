// What makes a home's router a NAT: its nftables ruleset, one per kind of home.

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

/**
 * Forwards LAN to internet and replies back; drops every other forwarded packet (so nothing from the
 * internet reaches a computer unless mapped). The router's own traffic is not rewritten, so
 * miniupnpd's STUN check sees its true port behaviour. UPnP homes get the chains miniupnpd fills
 * (table and chain names match the config upnp.ts writes).
 *
 * Like a home router's firewall (OpenWrt's wan zone: input REJECT), it rejects what the internet sends
 * its own address unasked. Without that, such a packet left a conntrack entry (peer:port -> router:port,
 * to the router itself) whose reply tuple is the mapping the router would give its computer's packets to
 * that peer, so masquerade picked another port for them and hole punching between two homes failed
 * whenever the far side's first ICE check arrived first (test/network/ice-pairs.test.ts).
 */
export function routerRuleset(kind: NatKind, lanCidr: string): string {
  const upnp = kind === 'upnp'
  const masquerade = kind === 'port-randomising' ? 'masquerade random,fully-random' : 'masquerade'
  return `
table inet filter {
  chain forward {
    type filter hook forward priority 0; policy drop;
    ct state established,related accept
    iifname "${LAN_BRIDGE}" oifname "${WAN_IF}" accept
    ${upnp ? 'jump miniupnpd' : ''}
  }
  chain input {
    type filter hook input priority 0; policy accept;
    iifname "${WAN_IF}" ct state established,related accept
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
    ip saddr ${lanCidr} oifname "${WAN_IF}" ${masquerade}
  }
  ${upnp ? 'chain prerouting_miniupnpd {\n  }\n  chain postrouting_miniupnpd {\n  }' : ''}
}
`
}
