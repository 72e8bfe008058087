// miniupnpd on a home router, and the STUN server it needs on the internet segment.
// Home C's maps IPv4 ports (UPnP-IGD, NAT-PMP, PCP); home D's opens IPv6 pinholes only (IGDv2
// WANIPv6FirewallControl and PCP MAP for a v6 address), every v4 mapping denied.
//
// miniupnpd 2.3 refuses port forwarding when its WAN address is reserved, and 198.18.0.0/15 is
// (RFC 2544). With ext_perform_stun it asks a STUN server instead; when the answer shows no NAT in
// front of it (its own address, same ports) it enables forwarding. So the internet runs a tiny STUN
// server that reports every sender as it sees it.
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { LAN_BRIDGE, WAN_IF } from './routers'
import type { HomePlan } from './topology'

export const STUN_PORT = 3478
export const NAT_PMP_PORT = 5351

/** A STUN binding responder (RFC 5389: MAPPED-ADDRESS and XOR-MAPPED-ADDRESS), as `node -e` source. */
export function stunServerSource(address: string): string {
  return `
const socket = require('node:dgram').createSocket('udp4')
socket.on('message', (m, from) => {
  if (m.length < 20 || m.readUInt16BE(0) !== 0x0001) return
  const out = Buffer.alloc(44)
  out.writeUInt16BE(0x0101, 0); out.writeUInt16BE(24, 2); m.copy(out, 4, 4, 20)
  const ip = from.address.split('.').reduce((a, b) => a * 256 + Number(b), 0)
  out.writeUInt16BE(0x0001, 20); out.writeUInt16BE(8, 22); out[25] = 1
  out.writeUInt16BE(from.port, 26); out.writeUInt32BE(ip, 28)
  out.writeUInt16BE(0x0020, 32); out.writeUInt16BE(8, 34); out[37] = 1
  out.writeUInt16BE(from.port ^ 0x2112, 38); out.writeUInt32BE((ip ^ 0x2112a442) >>> 0, 40)
  socket.send(out, from.port, from.address)
})
socket.bind(${STUN_PORT}, '${address}', () => console.log('stun ready'))
`
}

/**
 * Writes home `home`'s miniupnpd config into `dir`: any LAN computer may map or open any port, to its own address
 * only (secure_mode); a home with IPv6 maps no v4 port at all and opens v6 pinholes.
 */
export async function writeMiniupnpdConfig(dir: string, home: HomePlan, stunAddress: string): Promise<string> {
  const file = join(dir, `miniupnpd-${home.name}.conf`)
  const v4 = home.ipv6 === undefined ? [`allow 1-65535 ${home.lan} 1-65535`] : []
  const config = [
    `ext_ifname=${WAN_IF}`,
    `listening_ip=${LAN_BRIDGE}`,
    ...(home.ipv6 === undefined ? [] : [`ipv6_listening_ip=${home.ipv6.gateway}`]),
    'enable_natpmp=yes',
    'enable_upnp=yes',
    'secure_mode=yes',
    'ext_perform_stun=yes',
    `ext_stun_host=${stunAddress}`,
    `ext_stun_port=${STUN_PORT}`,
    'upnp_table_name=filter',
    'upnp_nat_table_name=nat',
    'upnp_forward_chain=miniupnpd',
    'upnp_nat_chain=prerouting_miniupnpd',
    'upnp_nat_postrouting_chain=postrouting_miniupnpd',
    `uuid=3c2d7a8e-5f1b-4c1e-9a8d-6e0f4b2c1a0${home.name}`,
    ...v4,
    'deny 0-65535 0.0.0.0/0 0-65535',
  ]
  await writeFile(file, `${config.join('\n')}\n`)
  return file
}
