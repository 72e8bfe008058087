import type { SwarmView } from '../../../protocol/app'
import type { HostSummary } from '../../../protocol/swarm'
import { formatBlocks, formatBytes, shortId } from '../../format'

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
}

export function hostRow(host: HostSummary): HostRow {
  const { state, profile } = host
  return {
    hostId: host.hostId,
    shortId: shortId(host.hostId),
    online: host.online,
    model: state.modelId ?? '—',
    blocks: state.blocks === null ? '—' : formatBlocks(state.blocks),
    status: state.status,
    msPerBlock: state.msPerBlock === null ? '—' : `${state.msPerBlock.toFixed(1)} ms`,
    cpu: `${profile.cpu.physicalCores}c/${profile.cpu.cores}t`,
    ram: formatBytes(profile.memory.totalBytes),
    sessions: `${state.activeSessions}/${state.maxSessions}`,
  }
}

/** Online hosts first, then by id, so rows do not jump around between refreshes. */
export function hostRows(view: SwarmView): HostRow[] {
  return [...view.hosts].sort((a, b) => Number(b.online) - Number(a.online) || a.hostId.localeCompare(b.hostId)).map(hostRow)
}

/** Blocks no ready host serves: a model with any cannot answer a chat. */
export function missingBlocks(coverage: number[]): number {
  return coverage.filter((hosts) => hosts === 0).length
}

export function onlineCount(view: SwarmView): number {
  return view.hosts.filter((h) => h.online).length
}
