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
}

export function hostRow(host: HostSummary, who = '', totalLayers?: number): HostRow {
  const { state, profile } = host
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
      return hostRow(host, who(host.hostId), model?.nLayer)
    })
}

/** Blocks no ready host serves: a model with any cannot answer a chat. */
export function missingBlocks(coverage: number[]): number {
  return coverage.filter((hosts) => hosts === 0).length
}

export function onlineCount(view: SwarmView): number {
  return view.hosts.filter((h) => h.online).length
}
