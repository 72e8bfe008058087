// Home D of the namespace network (test/network): global IPv6 behind a firewall that drops new inbound v6, and the
// host's PCP client (host/network/pinhole-pcp.ts) against the router's real miniupnpd, not a mock: no way in before a
// pinhole, a way in after, none once it is closed or the router restarts.

import type { ChildProcess } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildHomeNetwork, type HomeNetwork, whyNoMiniupnpd, whyNoNamespaces } from '.'
import { connect6, pinholeFrom, startServer6 } from './ipv6-probes'
import { mapPortByNatPmp } from './probes'

const why = whyNoNamespaces() ?? whyNoMiniupnpd()
const PORT = 7400

describe.skipIf(why !== undefined)(
  `home D: global IPv6 behind the router's firewall, pinholes by PCP${why === undefined ? '' : ` (skipped: ${why})`}`,
  () => {
    let net: HomeNetwork
    const servers: ChildProcess[] = []
    let hostD = ''
    let router = ''

    beforeAll(async () => {
      net = await buildHomeNetwork()
      hostD = net.addresses6.hostD ?? ''
      router = net.homes.d.ipv6?.gateway ?? ''
      servers.push(await startServer6(net, 'cloud', PORT), await startServer6(net, 'hostD', PORT))
    }, 60_000)
    afterAll(async () => {
      for (const s of servers) s.kill()
      await net?.close()
    })

    const open = (lifetimeS: number, nonce: string, port = PORT) =>
      pinholeFrom(net, 'hostD', { router, address: hostD, port, lifetimeS, nonce })

    it('gives home D’s computer a global address the cloud sees as it is (no NAT for v6)', async () => {
      expect(hostD).toMatch(/^2001:db8:4::/)
      expect(await connect6(net, 'hostD', net.addresses6.cloud ?? '', PORT)).toBe(hostD)
      expect(await connect6(net, 'laptop', net.addresses6.cloud ?? '', PORT)).toBe(net.addresses6.laptop)
    })

    it('drops new inbound v6 to home D’s computer, opens the pinholed port only, and closes it again', async () => {
      expect(await connect6(net, 'laptop', hostD, PORT)).toBe('failed timeout')
      const nonce = randomBytes(12).toString('hex')
      expect(await open(600, nonce)).toEqual({
        externalAddress: hostD,
        externalPort: PORT,
        lifetimeS: 600,
        epochS: expect.any(Number),
      })
      expect(await connect6(net, 'laptop', hostD, PORT)).toBe(net.addresses6.laptop)
      expect(await connect6(net, 'cloud', hostD, PORT)).toBe(net.addresses6.cloud)
      // another port of the same computer stays shut
      servers.push(await startServer6(net, 'hostD', PORT + 1))
      expect(await connect6(net, 'laptop', hostD, PORT + 1)).toBe('failed timeout')
      // the same nonce with lifetime 0 closes it
      expect((await open(0, nonce)).error).toBeUndefined()
      expect(await connect6(net, 'laptop', hostD, PORT)).toBe('failed timeout')
    })

    it('a pinhole is gone when the router restarts, and the same ask opens it again', async () => {
      const nonce = randomBytes(12).toString('hex')
      expect((await open(600, nonce)).externalPort).toBe(PORT)
      await net.restartUpnp('d')
      expect(await connect6(net, 'laptop', hostD, PORT)).toBe('failed timeout')
      expect((await open(600, nonce)).externalPort).toBe(PORT)
      expect(await connect6(net, 'laptop', hostD, PORT)).toBe(net.addresses6.laptop)
      expect((await open(0, nonce)).error).toBeUndefined()
    })

    it('a router that runs no PCP: the client says so within its timeout, and nothing opens', async () => {
      await net.stopUpnp('d')
      try {
        expect((await open(600, randomBytes(12).toString('hex'))).error).toMatch(/no PCP answer within 2000 ms/)
        expect(await connect6(net, 'laptop', hostD, PORT)).toBe('failed timeout')
      } finally {
        await net.restartUpnp('d')
      }
    })

    it('home D’s router maps no IPv4 port (v6 is its only way in)', async () => {
      await expect(mapPortByNatPmp(net, 'hostD', net.homes.d.gateway, PORT, PORT)).rejects.toThrow(/refused/)
    })
  },
)
