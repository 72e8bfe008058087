import { networkInterfaces } from 'node:os'

/** Listening on every interface: the host's own addresses are its candidates. */
export function listensEverywhere(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === ''
}

/** The IPv4 addresses of this computer's interfaces, loopback last (a tracker on this computer may still use it). */
export function interfaceAddresses(): string[] {
  const external: string[] = []
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) external.push(a.address)
  }
  return [...external, '127.0.0.1']
}

/** Global unicast IPv6 (2000::/3): reachable from the internet where the router's firewall lets it. */
export function isGlobalIpv6(address: string): boolean {
  return /^[23][0-9a-f]{0,3}:/i.test(address)
}

/** Unique local IPv6 (fc00::/7): one site's private network, as 10.0.0.0/8 is for IPv4. */
export function isUniqueLocalIpv6(address: string): boolean {
  return /^f[cd][0-9a-f]{0,2}:/i.test(address)
}

/**
 * This computer's IPv6 addresses worth offering: global ones first, then unique local ones (the tracker dials those
 * only from the same private network). Never link-local (fe80::/10: meaningless without this computer's interface
 * name) nor loopback.
 */
export function interfaceAddresses6(): string[] {
  const all: string[] = []
  for (const list of Object.values(networkInterfaces()))
    for (const a of list ?? []) if (a.family === 'IPv6' && !a.internal) all.push(a.address)
  return [...new Set([...all.filter(isGlobalIpv6), ...all.filter(isUniqueLocalIpv6)])]
}

/** This computer's global IPv6 addresses: the ones a router's firewall may open a pinhole to. */
export function globalAddresses6(): string[] {
  return interfaceAddresses6().filter(isGlobalIpv6)
}

/**
 * The data-plane endpoints a host listening at `listening` (ws://ADDR:PORT/) offers: each interface's address on that
 * port, public ones first; its IPv6 addresses (`ws://[ADDR]:PORT/`) too when it listens on `::` (dual stack).
 */
export function interfaceCandidates(listening: string): string[] {
  const url = new URL(listening)
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (!listensEverywhere(host)) return [listening]
  const at = (address: string) => `${url.protocol}//${address}:${url.port}/`
  const v4 = interfaceAddresses()
  const v6 = host === '::' ? interfaceAddresses6() : []
  const privateV4 = (a: string) => isPrivateIpv4(a) || a.startsWith('127.')
  return [
    ...v4.filter((a) => !privateV4(a)).map(at),
    ...v6.filter(isGlobalIpv6).map((a) => at(`[${a}]`)),
    ...v4.filter((a) => isPrivateIpv4(a)).map(at),
    ...v6.filter(isUniqueLocalIpv6).map((a) => at(`[${a}]`)),
    ...v4.filter((a) => a.startsWith('127.')).map(at),
  ]
}

function isPrivateIpv4(address: string): boolean {
  return /^(10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.)/.test(address)
}

/**
 * Whether any interface sits on a private network: then a router is
 * likely between it and the swarm, worth asking for a mapped port.
 */
export function behindRouter(): boolean {
  return interfaceAddresses().some(isPrivateIpv4)
}
