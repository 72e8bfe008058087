import type { HubDownloadView } from '../../../protocol/app'
import { formatBytes, formatDuration, formatRate } from '../../format'

/** Whether any download is still moving (its progress is worth asking for). */
export function downloading(downloads: readonly HubDownloadView[]): boolean {
  return downloads.some((d) => d.phase === 'downloading' || d.phase === 'adding')
}

/**
 * Whether this computer could hold a model of `modelBytes`, within its limits (`servableBytes`, from the Computer
 * screen): all of it, a share of its blocks (the swarm serves the rest), or too little to matter. Before download only
 * the size is known; the placement preview after it says exactly which blocks.
 */
export function hubFit(
  modelBytes: number,
  servableBytes: number | null,
): { level: 'all' | 'part' | 'none'; text: string } {
  if (servableBytes === null) return { level: 'part', text: 'This computer’s room is not measured yet.' }
  if (modelBytes <= servableBytes) return { level: 'all', text: 'Fits on this computer whole.' }
  const share = servableBytes / modelBytes
  if (share < 0.02) return { level: 'none', text: 'Too big for this computer’s limits; other hosts would serve it.' }
  return {
    level: 'part',
    text:
      `This computer can hold about ${Math.max(1, Math.floor(share * 100))}% of its blocks; ` +
      'other hosts serve the rest.',
  }
}

/** A download's state in words: percent, speed and time left, or what it is doing. */
export function downloadText(d: HubDownloadView): string {
  if (d.phase === 'adding') return 'Downloaded; packing and publishing…'
  if (d.phase === 'ready') return `Ready: published as ${d.modelId ?? ''}`
  if (d.phase === 'failed') return d.error?.message ?? 'The download failed.'
  if (d.totalBytes === 0) return 'Finding the files…'
  const percent = ((d.downloadedBytes / d.totalBytes) * 100).toFixed(1)
  const speed = d.bytesPerSecond > 0 ? ` at ${formatRate(d.bytesPerSecond)}` : ''
  const left = d.secondsLeft === null ? '' : `, ${formatDuration(d.secondsLeft)} left`
  return `${percent}% of ${formatBytes(d.totalBytes)}${speed}${left}`
}
