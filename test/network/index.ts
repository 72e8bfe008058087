// A network of Linux namespaces for tests and benches: a cloud and a laptop on an "internet" segment
// (198.18.0.0/24 and 2001:db8::/64), and four homes behind NAT routers, one with IPv6 behind a firewall.
// See README.md for the picture.
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { REPO_ROOT } from '../models'
import { attachShaped, attachToInternet, buildHome, buildInternet, lease, routeToHome6 } from './build'
import { waitForOutput } from './children'
import { createNamespace, deleteNamespace, MINIUPNPD, newRunPrefix, removeStaleNamespaces, runIn } from './namespaces'
import type { LinkShape, Shaper } from './shaper'
import {
  type AnyHomeName,
  type Computer,
  HOMES,
  type HomePlan,
  homeOf,
  INTERNET_ADDRESSES,
  INTERNET6_ADDRESSES,
  PLACES,
  type Place,
} from './topology'
import { stunServerSource, writeMiniupnpdConfig } from './upnp'

export { whyNoMiniupnpd, whyNoNamespaces } from './namespaces'
export type { NatKind } from './routers'
export type { LinkShape } from './shaper'
export type { AnyHomeName, Computer, HomeName, HomePlan, Place, Router } from './topology'
export { NAT_PMP_PORT } from './upnp'

/** The homes whose router runs miniupnpd. */
export type UpnpHome = 'c' | 'd' | 'e'

/** The links a shaper carries: each home's uplink, and the laptop's line when asked for. */
export type ShapedLink = AnyHomeName | 'laptop'

export interface HomeNetworkOptions {
  /**
   * Each home's link to the internet at the start; change it later with setLink. The laptop's line is shaped only
   * when given here (`laptop: {}` for a shaped line with no delay yet); without it the laptop is on a plain veth.
   */
  links?: Partial<Record<ShapedLink, LinkShape>>
  /** Start miniupnpd in homes C and D (default: true when /usr/sbin/miniupnpd exists). */
  upnp?: boolean
}

export interface HomeNetwork {
  /** `nrn<pid><letter>`: every namespace of this network is named `<prefix>-<place>`. */
  readonly prefix: string
  readonly namespaces: Readonly<Record<Place, string>>
  /** Each place's address: a router's is its WAN address, a computer's its current LAN address. */
  readonly addresses: Readonly<Record<Place, string>>
  /** IPv6 addresses: the cloud's, the laptop's, the internet's, home D's router (WAN) and computer. */
  readonly addresses6: Readonly<Partial<Record<Place, string>>>
  readonly homes: Readonly<Record<AnyHomeName, HomePlan>>
  /** Whether home C's router answers UPnP-IGD and NAT-PMP, and home D's opens IPv6 pinholes. */
  readonly upnp: boolean
  /** Runs `argv` in `place`; resolves its stdout, rejects with its stderr. */
  exec(place: Place, argv: readonly string[]): Promise<string>
  /** Starts a process in `place` (cwd: the repository root); close() kills it if it still runs. */
  spawnIn(place: Place, command: string, args?: readonly string[], options?: SpawnOptions): ChildProcess
  /**
   * Takes the home's WAN link down at the internet side, as in an outage: the router stays up and keeps its NAT state.
   */
  cutLink(home: AnyHomeName): Promise<void>
  restoreLink(home: AnyHomeName): Promise<void>
  /** Changes a home link's (or the shaped laptop's) one-way delay and rate, both ways, from now on. */
  setLink(link: ShapedLink, shape: LinkShape): Promise<void>
  /**
   * Restarts a home's miniupnpd (C by default; SIGTERM, as a router reboot would): every port mapping or pinhole it
   * held is gone. Starts it when it was stopped.
   */
  restartUpnp(home?: UpnpHome): Promise<void>
  /** Stops a home's miniupnpd (a router that offers no UPnP or PCP): mappings and pinholes it held are flushed. */
  stopUpnp(home: UpnpHome): Promise<void>
  /** Moves a home computer to a new LAN address, as a new DHCP lease would; resolves the address. */
  changeAddress(computer: Computer): Promise<string>
  /** Kills every process started here and deletes every namespace and link; safe to call twice. */
  close(): Promise<void>
}

/** Builds the network: a few seconds, most of it miniupnpd's STUN check. Needs root (see whyNoNamespaces). */
export async function buildHomeNetwork(options: HomeNetworkOptions = {}): Promise<HomeNetwork> {
  await removeStaleNamespaces()
  const prefix = newRunPrefix()
  const namespaces = Object.fromEntries(PLACES.map((p) => [p, `${prefix}-${p}`])) as Record<Place, string>
  const addresses = { ...INTERNET_ADDRESSES } as Record<Place, string>
  const addresses6: Partial<Record<Place, string>> = { ...INTERNET6_ADDRESSES }
  for (const home of Object.values(HOMES)) {
    // a router behind a carrier NAT: its own WAN address is the carrier's private one, the carrier's is the home's
    addresses[home.router] = home.carrier?.routerWan ?? home.wan
    if (home.carrier !== undefined) addresses[home.carrier.place] = home.wan
    if (home.ipv6 !== undefined) addresses6[home.router] = home.ipv6.wan
    for (const c of home.computers) {
      addresses[c.place] = c.address
      if (c.address6 !== undefined) addresses6[c.place] = c.address6
    }
  }
  const children = new Set<ChildProcess>()
  const shapers = new Map<ShapedLink, Shaper>()
  const dir = await mkdtemp(join(tmpdir(), `${prefix}-`))
  let nextHostNumber = 100
  let closed = false
  const miniupnpd = new Map<UpnpHome, ChildProcess>()

  const spawnIn = (place: Place, command: string, args: readonly string[] = [], spawnOptions: SpawnOptions = {}) => {
    const child = spawn('ip', ['netns', 'exec', namespaces[place], command, ...args], {
      cwd: REPO_ROOT,
      ...spawnOptions,
    })
    children.add(child)
    child.once('exit', () => children.delete(child))
    return child
  }
  const shaperOf = (link: ShapedLink) => {
    const shaper = shapers.get(link)
    if (shaper === undefined)
      throw new Error(
        `${link} has no link shaper ` +
          `(${link === 'laptop' ? 'build the network with links.laptop' : 'was the network closed?'})`,
      )
    return shaper
  }
  const uplink = (home: AnyHomeName, state: 'up' | 'down') =>
    runIn(namespaces.internet, ['ip', 'link', 'set', HOMES[home].uplink, state])

  const network: HomeNetwork = {
    prefix,
    namespaces,
    addresses,
    addresses6,
    homes: HOMES,
    upnp: false,
    exec: (place, argv) => runIn(namespaces[place], argv),
    spawnIn,
    cutLink: async (home) => {
      await uplink(home, 'down')
    },
    restoreLink: async (home) => {
      await uplink(home, 'up')
    },
    setLink: (home, shape) => shaperOf(home).set(shape),
    async restartUpnp(home = 'c') {
      if (!upnp) throw new Error(`home ${home} runs no miniupnpd (built with upnp: false, or miniupnpd is absent)`)
      await network.stopUpnp(home)
      miniupnpd.set(home, await startMiniupnpd(network, HOMES[home], dir))
    },
    async stopUpnp(home) {
      const running = miniupnpd.get(home)
      miniupnpd.delete(home)
      if (running === undefined || running.exitCode !== null) return
      const exited = new Promise((resolve) => running.once('exit', resolve))
      running.kill('SIGTERM')
      await exited
      // as a reboot would: miniupnpd leaves its IPv6 pinhole rules behind when it exits
      const router = namespaces[HOMES[home].router]
      for (const [table, chain] of [
        ['filter', 'miniupnpd'],
        ['nat', 'prerouting_miniupnpd'],
        ['nat', 'postrouting_miniupnpd'],
      ] as const)
        await runIn(router, ['nft', 'flush', 'chain', 'inet', table, chain])
    },
    async changeAddress(computer) {
      const home = homeOf(computer)
      const address = home.gateway.replace(/\.\d+$/, `.${nextHostNumber++}`)
      await lease(namespaces[computer], address, home)
      // (a v6 home keeps its computer's v6 address: the prefix is the home's, not the lease's)
      addresses[computer] = address
      return address
    },
    async close() {
      if (closed) return
      closed = true
      for (const child of children) child.kill('SIGKILL')
      for (const shaper of shapers.values()) shaper.stop()
      for (const place of PLACES) await deleteNamespace(namespaces[place])
      await rm(dir, { recursive: true, force: true })
    },
  }

  const upnp = options.upnp ?? existsSync(MINIUPNPD)
  try {
    for (const place of PLACES) await createNamespace(namespaces[place])
    await buildInternet(namespaces.internet)
    const { cloud, laptop } = INTERNET6_ADDRESSES
    await attachToInternet(namespaces.internet, namespaces.cloud, 'cloud', addresses.cloud, cloud)
    const laptopLink = options.links?.laptop
    if (laptopLink === undefined)
      await attachToInternet(namespaces.internet, namespaces.laptop, 'laptop', addresses.laptop, laptop)
    else
      shapers.set(
        'laptop',
        await attachShaped(namespaces.internet, namespaces.laptop, 'laptop', addresses.laptop, laptop, laptopLink),
      )
    for (const home of Object.values(HOMES)) {
      const names = {
        internet: namespaces.internet,
        router: namespaces[home.router],
        computers: home.computers.map((c) => namespaces[c.place]),
        carrier: home.carrier === undefined ? undefined : namespaces[home.carrier.place],
      }
      shapers.set(home.name, await buildHome(home, names, options.links?.[home.name] ?? {}, dir))
      for (const place of ['internet', 'cloud', 'laptop'] as const) await routeToHome6(namespaces[place], home)
    }
    if (upnp) for (const [home, daemon] of await startUpnp(network, dir)) miniupnpd.set(home, daemon)
    return { ...network, upnp }
  } catch (err) {
    await network.close()
    throw err
  }
}

/** The STUN server on the internet, then miniupnpd on homes C's, D's and E's routers once their STUN checks passed. */
async function startUpnp(network: HomeNetwork, dir: string): Promise<Array<[UpnpHome, ChildProcess]>> {
  const stun = network.spawnIn('internet', process.execPath, ['-e', stunServerSource(network.addresses.internet)])
  await waitForOutput(stun, /stun ready/, 'the STUN server')
  const homes = ['c', 'd', 'e'] as const
  return Promise.all(homes.map(async (home) => [home, await startMiniupnpd(network, HOMES[home], dir)]))
}

async function startMiniupnpd(network: HomeNetwork, home: HomePlan, dir: string): Promise<ChildProcess> {
  const config = await writeMiniupnpdConfig(dir, home, network.addresses.internet)
  const pid = join(dir, `miniupnpd-${home.name}.pid`)
  const miniupnpd = network.spawnIn(home.router, MINIUPNPD, ['-d', '-f', config, '-P', pid])
  const log = await waitForOutput(miniupnpd, /Listening for NAT-PMP/, `miniupnpd in ${network.namespaces[home.router]}`)
  // behind a carrier's NAT too (home E): its STUN check cannot tell that the carrier filters (the internet's STUN
  // server answers no CHANGE-REQUEST), so it maps ports on the home's router alone and names the carrier's address
  if (!log.includes('Port forwarding is now enabled'))
    throw new Error(`miniupnpd did not enable port forwarding after its STUN check:\n${log}`)
  return miniupnpd
}
