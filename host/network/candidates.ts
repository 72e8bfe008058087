import { networkInterfaces } from 'node:os'

/** Listening on every interface: the host's own addresses are its candidates. */
export function listensEverywhere(host: string): boolean {
  return host === '0.0.0.0' || host === '::' || host === ''
}

export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[|\]$/g, '')
  return bare === 'localhost' || bare === '::1' || bare.startsWith('127.')
}

/** The IPv4 addresses of this computer's interfaces, loopback last (a tracker on this computer may still use it). */
export function interfaceAddresses(): string[] {
  const external: string[] = []
  for (const list of Object.values(networkInterfaces())) {
    for (const a of list ?? []) if (a.family === 'IPv4' && !a.internal) external.push(a.address)
  }
  return [...external, '127.0.0.1']
}

/**
 * The data-plane endpoints a host listening at `listening`
 * (ws://ADDR:PORT/) offers: each interface's address on that port.
 */
export function interfaceCandidates(listening: string): string[] {
  const url = new URL(listening)
  const host = url.hostname.replace(/^\[|\]$/g, '')
  if (!listensEverywhere(host)) return [listening]
  return interfaceAddresses().map((address) => `${url.protocol}//${address}:${url.port}/`)
}

/**
 * Whether any interface sits on a private network: then a router is
 * likely between it and the swarm, worth asking for a mapped port.
 */
export function behindRouter(): boolean {
  return interfaceAddresses().some((a) => /^(10\.|192\.168\.|172\.(1[6-9]|2\d|3[01])\.)/.test(a))
}
