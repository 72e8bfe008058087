// The steps that wire namespaces into the internet segment and the homes.
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { connectNamespaces, run, runIn } from './namespaces'
import { CUSTOMER_IF, carrierRuleset, LAN_BRIDGE, routerRuleset, WAN_IF } from './routers'
import { type LinkShape, type Shaper, startShaper } from './shaper'
import { type HomePlan, INTERNET_ADDRESSES, INTERNET6_ADDRESSES, PREFIX_LENGTH, PREFIX6_LENGTH } from './topology'

const ip = (netns: string, ...args: string[]) => run(['ip', '-n', netns, ...args])
/** A v6 address usable at once: `nodad` skips duplicate address detection (a second of "tentative"). */
const addAddress6 = (netns: string, cidr: string, dev: string) => ip(netns, 'addr', 'add', cidr, 'dev', dev, 'nodad')

/** The internet: a bridge in its own namespace, holding 198.18.0.1 (the STUN server's address) and 2001:db8::1. */
export async function buildInternet(internet: string): Promise<void> {
  await ip(internet, 'link', 'add', LAN_BRIDGE, 'type', 'bridge')
  await ip(internet, 'addr', 'add', `${INTERNET_ADDRESSES.internet}/${PREFIX_LENGTH}`, 'dev', LAN_BRIDGE)
  await addAddress6(internet, `${INTERNET6_ADDRESSES.internet}/${PREFIX6_LENGTH}`, LAN_BRIDGE)
  await ip(internet, 'link', 'set', LAN_BRIDGE, 'up')
}

/** A computer on the internet itself (cloud, laptop): one veth into the bridge, an IPv4 and an IPv6 address. */
export async function attachToInternet(
  internet: string,
  netns: string,
  port: string,
  address: string,
  address6: string,
): Promise<void> {
  await connectNamespaces(netns, 'eth0', internet, port)
  await ip(internet, 'link', 'set', port, 'master', LAN_BRIDGE, 'up')
  await ip(netns, 'addr', 'add', `${address}/${PREFIX_LENGTH}`, 'dev', 'eth0')
  await addAddress6(netns, `${address6}/${PREFIX6_LENGTH}`, 'eth0')
  await ip(netns, 'link', 'set', 'eth0', 'up')
}

/**
 * The internet has no router of its own (one segment): each place on it reaches a home's v6 prefix through that
 * home's router, as an ISP routes a customer's delegated prefix to the customer's line.
 */
export async function routeToHome6(netns: string, home: HomePlan): Promise<void> {
  if (home.ipv6 === undefined) return
  await ip(netns, '-6', 'route', 'replace', home.ipv6.lan, 'via', home.ipv6.wan)
}

/** A computer on the internet behind a shaped link (the laptop, where a bench delays the client's own line). */
export async function attachShaped(
  internet: string,
  netns: string,
  port: string,
  address: string,
  address6: string,
  shape: LinkShape,
): Promise<Shaper> {
  const shaper = await startShaper(netns, 'eth0', internet, port, shape)
  await ip(internet, 'link', 'set', port, 'master', LAN_BRIDGE, 'up')
  await ip(netns, 'addr', 'add', `${address}/${PREFIX_LENGTH}`, 'dev', 'eth0')
  await addAddress6(netns, `${address6}/${PREFIX6_LENGTH}`, 'eth0')
  await ip(netns, 'link', 'set', 'eth0', 'up')
  return shaper
}

/**
 * Puts `computer` on a LAN at `address`, with the router as its default route (a DHCP lease, in effect); in a home
 * with IPv6, also at `address6` in the home's /64 with the router as its v6 default route (as SLAAC would give).
 */
export async function lease(computer: string, address: string, home: HomePlan, address6?: string): Promise<void> {
  await ip(computer, '-4', 'addr', 'flush', 'dev', 'eth0')
  await ip(computer, 'addr', 'add', `${address}/${home.lan.split('/')[1]}`, 'dev', 'eth0')
  await ip(computer, 'route', 'replace', 'default', 'via', home.gateway)
  if (home.ipv6 === undefined || address6 === undefined) return
  await ip(computer, '-6', 'addr', 'flush', 'dev', 'eth0', 'scope', 'global')
  await addAddress6(computer, `${address6}/${home.ipv6.lan.split('/')[1]}`, 'eth0')
  await ip(computer, '-6', 'route', 'replace', 'default', 'via', home.ipv6.gateway)
}

/**
 * A home: the router's WAN is a TAP that the shaper joins to its uplink TAP on the internet bridge
 * (so the link has a delay and a rate), a LAN bridge inside the router, computers on veths to it,
 * and the NAT ruleset. Returns the shaper, which owns the link: the link vanishes when it exits.
 */
export async function buildHome(
  home: HomePlan,
  names: { internet: string; router: string; computers: readonly string[]; carrier?: string | undefined },
  shape: LinkShape,
  dir: string,
): Promise<Shaper> {
  const { internet, router } = names
  const shaper =
    home.carrier === undefined || names.carrier === undefined
      ? await uplinkTo(internet, router, home.wan, home, shape)
      : await behindCarrier(internet, names.carrier, router, home, shape, dir)
  await runIn(router, ['sysctl', '-qw', 'net.ipv4.ip_forward=1'])
  await ip(router, 'link', 'add', LAN_BRIDGE, 'type', 'bridge')
  await ip(router, 'addr', 'add', `${home.gateway}/${home.lan.split('/')[1]}`, 'dev', LAN_BRIDGE)
  if (home.ipv6 !== undefined) {
    await runIn(router, ['sysctl', '-qw', 'net.ipv6.conf.all.forwarding=1'])
    await addAddress6(router, `${home.ipv6.wan}/${PREFIX6_LENGTH}`, WAN_IF)
    await addAddress6(router, `${home.ipv6.gateway}/${home.ipv6.lan.split('/')[1]}`, LAN_BRIDGE)
  }
  await ip(router, 'link', 'set', LAN_BRIDGE, 'up')
  for (const [i, computer] of names.computers.entries()) {
    const port = `lan${i + 1}`
    await connectNamespaces(computer, 'eth0', router, port)
    await ip(router, 'link', 'set', port, 'master', LAN_BRIDGE, 'up')
    await ip(computer, 'link', 'set', 'eth0', 'up')
    const plan = home.computers[i]
    if (plan === undefined) throw new Error(`home ${home.name} has no address for its computer ${i + 1}`)
    await lease(computer, plan.address, home, plan.address6)
  }
  const rules = join(dir, `router-${home.name}.nft`)
  await writeFile(rules, routerRuleset(home))
  await runIn(router, ['nft', '-f', rules])
  return shaper
}

/** `namespace`'s WAN (a TAP the shaper joins to the home's uplink on the internet bridge) at `address`. */
async function uplinkTo(
  internet: string,
  namespace: string,
  address: string,
  home: HomePlan,
  shape: LinkShape,
): Promise<Shaper> {
  const shaper = await startShaper(namespace, WAN_IF, internet, home.uplink, shape)
  await ip(internet, 'link', 'set', home.uplink, 'master', LAN_BRIDGE, 'up')
  await ip(namespace, 'addr', 'add', `${address}/${PREFIX_LENGTH}`, 'dev', WAN_IF)
  await ip(namespace, 'link', 'set', WAN_IF, 'up')
  return shaper
}

/**
 * A carrier-grade NAT between the internet and the home's router: the carrier holds the shaped uplink and the home's
 * public address, the router's WAN sits on the carrier's private network (a plain veth), and the carrier masquerades
 * it keeping ports, as Linux conntrack filters (carrierRuleset).
 */
async function behindCarrier(
  internet: string,
  carrier: string,
  router: string,
  home: HomePlan,
  shape: LinkShape,
  dir: string,
): Promise<Shaper> {
  const plan = home.carrier
  if (plan === undefined) throw new Error(`home ${home.name} has no carrier NAT`)
  const shaper = await uplinkTo(internet, carrier, home.wan, home, shape)
  await runIn(carrier, ['sysctl', '-qw', 'net.ipv4.ip_forward=1'])
  await connectNamespaces(router, WAN_IF, carrier, CUSTOMER_IF)
  const bits = plan.inside.split('/')[1]
  await ip(carrier, 'addr', 'add', `${plan.gateway}/${bits}`, 'dev', CUSTOMER_IF)
  await ip(carrier, 'link', 'set', CUSTOMER_IF, 'up')
  await ip(router, 'addr', 'add', `${plan.routerWan}/${bits}`, 'dev', WAN_IF)
  await ip(router, 'link', 'set', WAN_IF, 'up')
  await ip(router, 'route', 'replace', 'default', 'via', plan.gateway)
  const rules = join(dir, `carrier-${home.name}.nft`)
  await writeFile(rules, carrierRuleset(plan.inside))
  await runIn(carrier, ['nft', '-f', rules])
  return shaper
}
