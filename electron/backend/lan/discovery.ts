import { isIPv4 } from 'node:net'
import type { Bonjour, Browser, Service } from 'bonjour-service'
import { LAN_SERVICE_TYPE, type LanPeer, LanTxt } from '../../../protocol'

/** How often the browser asks again, so an app that missed an announcement is found within this. */
const QUERY_EVERY_MS = 5_000

/** The Neuron apps advertised on the home network, this one left out; `changed` on every up, down or update. */
export class LanDiscovery {
  private readonly browser: Browser
  private readonly timer: NodeJS.Timeout

  constructor(
    bonjour: Bonjour,
    private readonly ownKey: () => string,
    changed: () => void,
  ) {
    this.browser = bonjour.find({ type: LAN_SERVICE_TYPE })
    for (const event of ['up', 'down', 'txt-update', 'srv-update'] as const) this.browser.on(event, () => changed())
    this.timer = setInterval(() => this.browser.update(), QUERY_EVERY_MS)
    this.timer.unref()
  }

  /** The apps found now; `paired` tells which keys this app paired with. */
  peers(paired: ReadonlySet<string>): LanPeer[] {
    const found = new Map<string, LanPeer>()
    for (const service of this.browser.services) {
      const peer = peerOf(service, paired)
      if (peer !== null && peer.key !== this.ownKey()) found.set(peer.key, peer)
    }
    return [...found.values()].sort((a, b) => a.name.localeCompare(b.name) || a.key.localeCompare(b.key))
  }

  stop(): void {
    clearInterval(this.timer)
    this.browser.stop()
  }
}

/**
 * A service's TXT parsed (an app of another version, or anything else, is skipped), at the address it answered from.
 */
function peerOf(service: Service, paired: ReadonlySet<string>): LanPeer | null {
  const txt = LanTxt.safeParse(service.txt)
  if (!txt.success) return null
  const candidates = [service.referer?.address, ...(service.addresses ?? [])].filter(
    (a): a is string => typeof a === 'string',
  )
  const address = candidates.find((a) => isIPv4(a)) ?? candidates[0]
  if (address === undefined) return null
  const { key, id, name, port, pair } = txt.data
  return { key, hostId: id, name, address, trackerPort: port, pairingPort: pair, paired: paired.has(key) }
}
