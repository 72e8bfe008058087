import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildHomeNetwork, type HomeNetwork, whyNoMiniupnpd, whyNoNamespaces } from './index'
import { listNamespaces } from './namespaces'
import { connectFrom, mapPortByNatPmp, startServer } from './probes'
import { PLACES } from './topology'

const noNetwork = whyNoNamespaces()
const noUpnp = noNetwork ?? whyNoMiniupnpd()
const skipped = (why: string | undefined) => (why === undefined ? '' : ` (skipped: ${why})`)
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? Number.NaN
/** The median of 7 TCP connects from `place` to the cloud's who-am-i server, ms. */
async function medianConnectMs(net: HomeNetwork, place: 'hostA' | 'laptop'): Promise<number> {
  const samples: number[] = []
  for (let i = 0; i < 7; i++) samples.push((await connectFrom(net, place, net.addresses.cloud, 7000)).connectMs)
  return median(samples)
}

describe.skipIf(noNetwork !== undefined)(
  `a namespace network of a cloud, a laptop and three homes behind NAT routers${skipped(noNetwork)}`,
  () => {
    let net: HomeNetwork
    beforeAll(async () => {
      net = await buildHomeNetwork()
      await startServer(net, 'cloud', 'who-am-i', 7000)
    })
    afterAll(async () => {
      await net?.close()
    })

    it(
      'lets the laptop and every home computer reach the cloud, which sees a home computer as its router’s WAN ' +
        'address',
      async () => {
        const seen = async (place: 'laptop' | 'hostA' | 'peerA' | 'hostB' | 'hostC') =>
          (await connectFrom(net, place, net.addresses.cloud, 7000)).reply.split(' ')[0]
        expect(await seen('laptop')).toBe(net.addresses.laptop)
        expect(await seen('hostA')).toBe(net.addresses.routerA)
        expect(await seen('peerA')).toBe(net.addresses.routerA)
        expect(await seen('hostB')).toBe(net.addresses.routerB)
        expect(await seen('hostC')).toBe(net.addresses.routerC)
      },
    )

    it('keeps a connection’s source port through home A’s router and changes it through home B’s', async () => {
      const ports = async (place: 'hostA' | 'hostB', first: number) => {
        const out: Array<[number, number]> = []
        for (const local of [first, first + 1, first + 2]) {
          const { reply } = await connectFrom(net, place, net.addresses.cloud, 7000, { localPort: local })
          out.push([local, Number(reply.split(' ')[1])])
        }
        return out
      }
      for (const [local, seen] of await ports('hostA', 41001)) expect(seen).toBe(local)
      for (const [local, seen] of await ports('hostB', 42001)) expect(seen).not.toBe(local)
    })

    it(
      'refuses the laptop a connection to a home computer, ' + 'by its LAN address or an unmapped port on its router',
      async () => {
        await startServer(net, 'hostA', 'hello', 7100)
        expect((await connectFrom(net, 'peerA', net.addresses.hostA, 7100)).reply).toBe('hello from hostA')
        expect((await connectFrom(net, 'laptop', net.addresses.routerA, 7100)).reply).toMatch(/^failed/)
        // Even a laptop that routes the home's LAN range to its
        // router gets nowhere: the router forwards nothing inbound.
        await net.exec('laptop', ['ip', 'route', 'add', net.homes.a.lan, 'via', net.addresses.routerA])
        try {
          expect((await connectFrom(net, 'laptop', net.addresses.hostA, 7100, { timeoutMs: 1500 })).reply).toMatch(
            /^failed/,
          )
        } finally {
          await net.exec('laptop', ['ip', 'route', 'del', net.homes.a.lan])
        }
      },
    )

    it.skipIf(noUpnp !== undefined)(
      `lets the laptop reach home C’s computer through a port it mapped by NAT-PMP${skipped(noUpnp)}`,
      async () => {
        await startServer(net, 'hostC', 'hello', 7200)
        expect((await connectFrom(net, 'laptop', net.addresses.routerC, 17200)).reply).toMatch(/^failed/)
        const external = await mapPortByNatPmp(net, 'hostC', net.homes.c.gateway, 7200, 17200)
        expect((await connectFrom(net, 'laptop', net.addresses.routerC, external)).reply).toBe('hello from hostC')
      },
    )

    it('adds about twice a link’s one-way delay to a round trip from behind it', async () => {
      const connectMs = () => medianConnectMs(net, 'hostA')
      const before = await connectMs()
      await net.setLink('a', { delayMs: 20 })
      const after = await connectMs()
      await net.setLink('a', { delayMs: 0 })
      console.log(`home A: TCP connect ${before.toFixed(1)} ms at 0 ms one-way delay, ${after.toFixed(1)} ms at 20 ms`)
      expect(after - before).toBeGreaterThan(32)
      expect(after - before).toBeLessThan(60)
    })

    it('stalls an open connection while home A’s link is cut and lets it continue once restored', async () => {
      await startServer(net, 'cloud', 'ticker', 7300)
      const client = net.spawnIn('hostA', process.execPath, [
        '-e',
        `require('node:net').connect(7300, '${net.addresses.cloud}').pipe(process.stdout)`,
      ])
      let received = 0
      client.stdout?.on('data', (chunk: Buffer) => {
        received += chunk.length
      })
      const grows = async (withinMs: number) => {
        const from = received
        for (let waited = 0; waited < withinMs && received === from; waited += 50) await sleep(50)
        return received > from
      }
      expect(await grows(3000)).toBe(true)
      await net.cutLink('a')
      await sleep(300) // frames already past the cut still arrive
      expect(await grows(2000)).toBe(false)
      await net.restoreLink('a')
      expect(await grows(15_000)).toBe(true)
      client.kill()
    })

    it('moves a home computer to a new LAN address, from which it still reaches the cloud', async () => {
      const old = net.addresses.peerA
      const address = await net.changeAddress('peerA')
      expect(address).not.toBe(old)
      expect(await net.exec('peerA', ['ip', '-4', '-o', 'addr', 'show', 'dev', 'eth0'])).toContain(address)
      expect((await connectFrom(net, 'peerA', net.addresses.cloud, 7000)).reply.split(' ')[0]).toBe(
        net.addresses.routerA,
      )
    })

    it('leaves no namespace of its own behind when closed', async () => {
      expect((await listNamespaces()).filter((n) => n.startsWith(`${net.prefix}-`))).toHaveLength(PLACES.length)
      await net.close()
      expect((await listNamespaces()).filter((n) => n.startsWith(`${net.prefix}-`))).toEqual([])
    })
  },
)

describe.skipIf(noNetwork !== undefined)(
  `a namespace network whose laptop sits behind a shaped line too${skipped(noNetwork)}`,
  () => {
    let net: HomeNetwork
    beforeAll(async () => {
      net = await buildHomeNetwork({ links: { laptop: {} }, upnp: false })
      await startServer(net, 'cloud', 'who-am-i', 7000)
    })
    afterAll(async () => {
      await net?.close()
    })

    it(
      'reaches the cloud as before, and a delay on the laptop’s line adds about twice itself to the laptop’s ' +
        'round trips',
      async () => {
        const connectMs = () => medianConnectMs(net, 'laptop')
        expect((await connectFrom(net, 'laptop', net.addresses.cloud, 7000)).reply.split(' ')[0]).toBe(
          net.addresses.laptop,
        )
        const before = await connectMs()
        await net.setLink('laptop', { delayMs: 20 })
        const after = await connectMs()
        console.log(
          `laptop: TCP connect ${before.toFixed(1)} ms at 0 ms one-way delay, ${after.toFixed(1)} ms at 20 ms`,
        )
        expect(after - before).toBeGreaterThan(32)
        expect(after - before).toBeLessThan(60)
      },
    )
  },
)
