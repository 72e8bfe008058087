// A host's IPv6 pinholes: for each global IPv6 address of this computer, the router's firewall is asked (PCP MAP,
// pinhole-pcp.ts) to let the internet reach the data-plane port; asked again before the lifetime ends (and every
// 15 s, as for a mapped port: a router that restarted has forgotten it), and closed when the host stops.

import { readFileSync } from 'node:fs'
import { AskAgain } from './ask-again'
import { type PinholeGrant, pinholeNonce, requestPinhole } from './pinhole-pcp'

/** How often a pinhole is asked for again at most, ms (a restarted router forgets it). */
const REFRESH_MS = 15_000
/** What the host asks for, s: an hour, renewed long before (RFC 6887 suggests asking again at half the lifetime). */
const LIFETIME_S = 3_600
/** Pinholes for at most this many addresses (a stable address and a few temporary ones). */
const MAX_ADDRESSES = 4

/** An open pinhole: the endpoint the internet may reach this host at. */
export interface OpenPinhole {
  readonly address: string
  readonly port: number
}

export interface PinholeOptions {
  /** This computer's global IPv6 addresses now (asked each round: a new prefix or temporary address). */
  readonly addresses: () => readonly string[]
  /** The router to ask; default the IPv6 default route's next hop (Linux: /proc/net/ipv6_route). */
  readonly router?: string
  readonly routerPort?: number
  readonly refreshMs?: number
  readonly lifetimeS?: number
  /** Called when the set of open pinholes changes. */
  readonly onChange: (open: readonly OpenPinhole[]) => void
  readonly log?: (line: string) => void
}

interface Held {
  readonly nonce: Buffer
  grant: PinholeGrant | undefined
}

/** The pinholes of one port, kept open while the host serves. */
export class Pinholes {
  private readonly held = new Map<string, Held>()
  private nextMs: number
  private readonly schedule = new AskAgain(
    () => this.askAll(),
    () => this.nextMs,
  )

  constructor(
    readonly port: number,
    private readonly options: PinholeOptions,
  ) {
    this.nextMs = options.refreshMs ?? REFRESH_MS
  }

  /** The pinholes open now. */
  get open(): OpenPinhole[] {
    return [...this.held.entries()].flatMap(([address, h]) =>
      h.grant === undefined ? [] : [{ address: h.grant.externalAddress || address, port: h.grant.externalPort }],
    )
  }

  /** Asks at once, then again before each lifetime ends; never throws (no router that answers means no pinhole). */
  start(): Promise<void> {
    return this.refresh()
  }

  /** Asks again now (this computer's addresses changed), then on schedule. */
  refresh(): Promise<void> {
    return this.schedule.now()
  }

  private async askAll(): Promise<void> {
    const before = JSON.stringify(this.open)
    const router = this.options.router ?? defaultRouter6()
    const addresses = this.options.addresses().slice(0, MAX_ADDRESSES)
    // addresses this computer no longer has: their pinholes lapse at the router
    for (const gone of [...this.held.keys()].filter((a) => !addresses.includes(a))) this.held.delete(gone)
    let lifetimeS = this.options.lifetimeS ?? LIFETIME_S
    if (router === undefined) {
      for (const h of this.held.values()) h.grant = undefined
      if (addresses.length > 0) this.options.log?.('no IPv6 default route: no router to ask for a pinhole')
    } else
      for (const address of addresses) {
        const held = this.held.get(address) ?? { nonce: pinholeNonce(), grant: undefined }
        this.held.set(address, held)
        try {
          held.grant = await requestPinhole({
            router,
            internal: address,
            port: this.port,
            lifetimeS,
            nonce: held.nonce,
            ...(this.options.routerPort === undefined ? {} : { routerPort: this.options.routerPort }),
          })
          lifetimeS = Math.min(lifetimeS, held.grant.lifetimeS)
        } catch (error) {
          if (held.grant !== undefined || before === '[]')
            this.options.log?.(`no IPv6 pinhole for [${address}]:${this.port}: ${(error as Error).message}`)
          held.grant = undefined
        }
      }
    if (this.schedule.closed) return
    // renew at half the shortest lifetime granted, or sooner
    this.nextMs = Math.min(this.options.refreshMs ?? REFRESH_MS, (lifetimeS * 1000) / 2)
    const now = JSON.stringify(this.open)
    if (now === before) return
    const endpoints = this.open.map((p) => `[${p.address}]:${p.port}`).join(', ')
    this.options.log?.(
      endpoints === ''
        ? `the router opens no IPv6 pinhole to port ${this.port}`
        : `the router's firewall lets the internet reach ${endpoints}`,
    )
    this.options.onChange(this.open)
  }

  /** Stops renewing and closes every pinhole at the router (best effort: one that is gone lapses at its lifetime). */
  async close(): Promise<void> {
    if (this.schedule.closed) return
    await this.schedule.close()
    const router = this.options.router ?? defaultRouter6()
    if (router === undefined) return
    await Promise.all(
      [...this.held.entries()]
        .filter(([, h]) => h.grant !== undefined)
        .map(([address, h]) =>
          requestPinhole({
            router,
            internal: address,
            port: this.port,
            lifetimeS: 0,
            nonce: h.nonce,
            timeoutMs: 1_000,
            ...(this.options.routerPort === undefined ? {} : { routerPort: this.options.routerPort }),
          }).catch(() => undefined),
        ),
    )
    this.held.clear()
  }
}

/**
 * The next hop of this computer's IPv6 default route (`fe80::1%eth0` when link-local), from /proc/net/ipv6_route:
 * the PCP server is the default router (RFC 6887 section 8.1). Undefined where there is none or no such file.
 */
export function defaultRouter6(table = readRoutes()): string | undefined {
  let best: { hop: string; metric: number } | undefined
  for (const line of table.split('\n').slice(0, 4096)) {
    const f = line.trim().split(/\s+/)
    if (f.length < 10 || f[0] !== '0'.repeat(32) || f[1] !== '00') continue
    const hopHex = f[4] ?? ''
    if (!/^[0-9a-f]{32}$/.test(hopHex) || /^0+$/.test(hopHex)) continue
    const metric = Number.parseInt(f[5] ?? '', 16)
    const groups = hopHex.match(/.{4}/g) ?? []
    const hop = new URL(`http://[${groups.join(':')}]/`).hostname.slice(1, -1)
    const zoned = hop.startsWith('fe8') ? `${hop}%${f[9]}` : hop
    if (best === undefined || metric < best.metric) best = { hop: zoned, metric }
  }
  return best?.hop
}

function readRoutes(): string {
  try {
    return readFileSync('/proc/net/ipv6_route', 'utf8')
  } catch {
    return ''
  }
}
