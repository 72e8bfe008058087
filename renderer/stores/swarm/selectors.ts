import type { SwarmView } from '../../../protocol/app'
import type { HostSummary } from '../../../protocol/swarm'
import { formatBytes, shortId } from '../../format'
import { layerRange } from '../../words'

export interface HostRow {
  hostId: string
  shortId: string
  online: boolean
  model: string
  blocks: string
  status: string
  msPerBlock: string
  cpu: string
  ram: string
  sessions: string
  /** 'this computer', a paired computer's name, or '' for any other host. */
  who: string
  /** How this app's chats reach it: direct, punched, relayed, or '—' (not tried yet, or this computer). */
  path: string
  /** The path in a sentence, for its tooltip. */
  pathTitle: string
  /**
   * How this computer's host forwards to it, where it forwarded to it lately: 'punched', 'through the client', or ''.
   */
  seam: string
  seamTitle: string
}

const SEAMS: Record<string, [string, string]> = {
  punched: ['punched', "this computer's host sends it hidden states over a channel it punched through both routers"],
  relayed: [
    'through the client',
    "this computer's host could not punch a channel to it: the chat's client carries the hidden states between them",
  ],
}

const PATH_TITLES: Record<string, string> = {
  direct: 'reached directly: its router maps a port to it, or it is on a public address',
  punched: 'reached through a channel punched through both routers: no relay carries its traffic',
  relayed: 'reached through a relay: no direct connection or punched channel got through',
  '—': 'not reached by this app yet (it takes no connections: the first chat through it tries a punched channel)',
}

/** How this app reaches `host` (SwarmView.reached): direct where it has an endpoint. */
export function pathTo(host: HostSummary, reached: SwarmView['reached'], thisHostId?: string): string {
  if (host.hostId === thisHostId) return '—'
  if (host.state.endpoint !== null) return 'direct'
  return reached?.find((r) => r.hostId === host.hostId)?.path ?? '—'
}

export function hostRow(host: HostSummary, who = '', totalLayers?: number, path = '—', seamPath?: string): HostRow {
  const { state, profile } = host
  const [seam, seamTitle] = SEAMS[seamPath ?? ''] ?? ['', '']
  return {
    hostId: host.hostId,
    shortId: shortId(host.hostId),
    online: host.online,
    model: state.modelId ?? '—',
    blocks: state.blocks === null ? '—' : layerRange(state.blocks, totalLayers),
    status: state.status,
    msPerBlock: state.msPerBlock === null ? '—' : `${state.msPerBlock.toFixed(1)} ms`,
    cpu: `${profile.cpu.physicalCores}c/${profile.cpu.cores}t`,
    ram: formatBytes(profile.memory.totalBytes),
    sessions: `${state.activeSessions}/${state.maxSessions}`,
    who,
    path,
    pathTitle: PATH_TITLES[path] ?? '',
    seam,
    seamTitle,
  }
}

/** Online hosts first, then by id, so rows do not jump around between refreshes. */
export function hostRows(view: SwarmView): HostRow[] {
  const paired = new Map(view.paired.map((p) => [p.hostId, p.name]))
  const who = (hostId: string) => (hostId === view.thisHostId ? 'this computer' : (paired.get(hostId) ?? ''))
  return [...view.hosts]
    .sort((a, b) => Number(b.online) - Number(a.online) || a.hostId.localeCompare(b.hostId))
    .map((host) => {
      const model = view.models.find((m) => m.modelId === host.state.modelId)
      const seam = view.seams?.find((s) => s.hostId === host.hostId)?.path
      return hostRow(host, who(host.hostId), model?.nLayer, pathTo(host, view.reached, view.thisHostId), seam)
    })
}

/** Blocks no ready host serves: a model with any cannot answer a chat. */
export function missingBlocks(coverage: number[]): number {
  return coverage.filter((hosts) => hosts === 0).length
}

export function onlineCount(view: SwarmView): number {
  return view.hosts.filter((h) => h.online).length
}
