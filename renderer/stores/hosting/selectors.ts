import type {
  ArtifactProgress,
  HostingPhase,
  HostingPreview,
  HostingStatus,
  TrackerLinkStatus,
} from '../../../protocol/app'
import type { BlockRange } from '../../../protocol/blocks'
import type { PlacementOption } from '../../../protocol/placement'
import type { ConnectionState } from '../../api/socketBridge'
import { formatBytes, formatDuration, formatRate } from '../../format'
import { layerCount } from '../../words'

export interface PlacementCell {
  block: number
  /** Hosts serving this block before this computer joins. */
  before: number
  proposed: boolean
}

export function placementCells(preview: HostingPreview, chosen: BlockRange | null): PlacementCell[] {
  return preview.placement.coverage.map((c) => ({
    block: c.block,
    before: c.before.hosts,
    proposed: chosen !== null && c.block >= chosen[0] && c.block < chosen[1],
  }))
}

/** 0..1 colour strength of a block's coverage, relative to the best covered block (0 stays empty). */
export function coverageIntensity(hosts: number, maxHosts: number): number {
  if (hosts <= 0) return 0
  return 0.25 + 0.75 * (hosts / Math.max(1, maxHosts))
}

export function sameRange(a: BlockRange | null, b: BlockRange | null): boolean {
  return a !== null && b !== null && a[0] === b[0] && a[1] === b[1]
}

/** The option the user has chosen: the tracker's proposal or one of its alternatives. */
export function chosenOption(preview: HostingPreview, chosen: BlockRange | null): PlacementOption | null {
  const { proposal, alternatives } = preview.placement
  if (proposal !== null && (chosen === null || sameRange(proposal.blocks, chosen))) return proposal
  return alternatives.find((a) => sameRange(a.blocks, chosen)) ?? proposal
}

/**
 * Credits per hour for the chosen option, and whether it is only an estimate. The tracker prices each
 * option (`hostMicroPerHour`); from a tracker that does not, an alternative is estimated from the
 * proposal's figure by the block-tokens per second it would serve (credits are paid per block-token).
 */
export function creditsPerHour(
  preview: HostingPreview,
  option: PlacementOption | null,
): { credits: number; estimated: boolean } | null {
  if (option === null) return null
  if (option.hostMicroPerHour !== undefined) return { credits: option.hostMicroPerHour / 1e6, estimated: false }
  const { proposal } = preview.placement
  if (preview.creditsPerHourMicro === null || proposal === null) return null
  const rate = (o: PlacementOption) => (o.blocks[1] - o.blocks[0]) * o.expectedTokensPerSecond
  const scale = rate(proposal) === 0 ? 1 : rate(option) / rate(proposal)
  return { credits: (preview.creditsPerHourMicro * scale) / 1e6, estimated: !sameRange(option.blocks, proposal.blocks) }
}

/**
 * The option's cache as the preview shows it: bytes per token per block (the average over the range, whose
 * blocks may differ: MLA latents, sliding windows) and what the range reserves at the KV budget. Null from
 * a tracker that does not send the figures.
 */
export function cacheFigures(option: PlacementOption): { perTokenPerBlock: string; reserved: string } | null {
  if (option.cacheBytesPerToken === undefined || option.cacheBytes === undefined) return null
  const blocks = option.blocks[1] - option.blocks[0]
  const perBlock = option.cacheBytesPerToken / blocks
  return {
    perTokenPerBlock: `${Number.isInteger(perBlock) ? '' : '≈ '}${formatBytes(Math.round(perBlock))} per token`,
    reserved: `${formatBytes(option.cacheBytes)} reserved for ${layerCount(blocks)}`,
  }
}

/**
 * What the chosen range still has to fetch, counting the files already on this computer: "On disk" when all are,
 * the rest "To download" with what is here in the hint. An older backend that does not say: the tracker's figure.
 */
export function downloadFigure(
  preview: HostingPreview,
  option: PlacementOption,
): { label: string; value: string; hint: string | undefined } {
  const here = preview.bytesOnDisk?.find((d) => sameRange(d.blocks, option.blocks))?.bytes ?? 0
  if (here > 0 && here >= option.bytesToDownload)
    return { label: 'On disk', value: formatBytes(here), hint: 'every file is already here: nothing to download' }
  return {
    label: 'To download',
    value: formatBytes(option.bytesToDownload - here),
    hint: here > 0 ? `${formatBytes(here)} already on disk` : undefined,
  }
}

/**
 * Tokens of the one session the long-context figure is quoted for
 * when the tracker does not say (protocol/blocks.ts LONG_CONTEXT).
 */
const LONG_CONTEXT_TOKENS = 131_072

/** A context length as people say it: 2K, 128K, or the exact count when it is not a whole number of K. */
export function contextLabel(tokens: number): string {
  return tokens % 1024 === 0 ? `${tokens / 1024}K` : tokens.toLocaleString('en-US')
}

/**
 * The route around the chosen option: hosts like this computer one route needs, the bytes each token brings into and
 * sends out of the range, and its cache per token over a
 * 128K-token session. Each null from a tracker that does not say.
 */
export function routeFigures(
  preview: HostingPreview,
  option: PlacementOption,
): {
  hostsPerRoute: string | null
  seam: string | null
  longContext: { label: string; perToken: string; session: string } | null
} {
  const hosts = preview.placement.hostsPerRoute
  const long = option.longContextCacheBytes
  const tokens = option.longContextTokens ?? LONG_CONTEXT_TOKENS
  return {
    hostsPerRoute: hosts === undefined ? null : hosts === null ? 'none: no block fits' : `${hosts}`,
    seam: option.seamBytesPerToken === undefined ? null : `${formatBytes(option.seamBytesPerToken)} per token`,
    longContext:
      long === undefined
        ? null
        : {
            label: `Cache at ${contextLabel(tokens)}`,
            perToken: `${formatBytes(Math.round(long / tokens))} per token`,
            session: `${formatBytes(long)} for one ${contextLabel(tokens)}-token session`,
          },
  }
}

const PHASE_TEXT: Record<HostingPhase, string> = {
  idle: 'Not hosting',
  downloading: 'Downloading layers',
  loading: 'Loading layers into memory',
  serving: 'Serving',
  paused: 'Paused',
  stopping: 'Stopping',
  failed: 'Failed',
}

export function phaseText(phase: HostingPhase): string {
  return PHASE_TEXT[phase]
}

/** What stands between this screen and hosting: nothing, the app's backend, or its tracker. */
export type HostingReach = 'ok' | 'app' | 'tracker'

export function hostingReach(app: ConnectionState, tracker: TrackerLinkStatus | null): HostingReach {
  if (app !== 'open') return 'app'
  return tracker?.state === 'unreachable' ? 'tracker' : 'ok'
}

/**
 * The Host screen's badge: the phase the backend last told, unless that cannot be true now (a backend out of
 * reach tells nothing; a host whose tracker is lost is routed no chats), as the sidebar's status line says.
 */
export function hostingBadge(phase: HostingPhase, reach: HostingReach): { text: string; tone: string } {
  if (reach === 'app') return { text: 'Unreachable — the app is not answering', tone: 'unreachable' }
  if (reach === 'tracker' && phase !== 'idle' && phase !== 'paused')
    return { text: 'Tracker unreachable — no chats reach this computer', tone: 'unreachable' }
  return { text: phaseText(phase), tone: phase }
}

/** The picker and preview show while nothing is hosted (or hosting failed); otherwise the progress view. */
export function showsPicker(status: HostingStatus | null): boolean {
  return status === null || status.phase === 'idle' || status.phase === 'failed'
}

export interface ArtifactRow {
  file: string
  fraction: number
  bytes: string
  speed: string
  peers: number
  eta: string
}

export function artifactRow(artifact: ArtifactProgress): ArtifactRow {
  const done = artifact.totalBytes > 0 && artifact.downloadedBytes >= artifact.totalBytes
  return {
    file: artifact.file,
    fraction: artifact.totalBytes === 0 ? 1 : Math.min(1, artifact.downloadedBytes / artifact.totalBytes),
    bytes: `${formatBytes(artifact.downloadedBytes)} / ${formatBytes(artifact.totalBytes)}`,
    speed: done ? '—' : formatRate(artifact.bytesPerSecond),
    peers: artifact.peers,
    eta: done ? 'done' : artifact.etaSeconds === null ? 'estimating…' : formatDuration(artifact.etaSeconds),
  }
}

export function uptimeText(startedAt: number, now: number): string {
  return formatDuration((now - startedAt) / 1000)
}

// Nothing works while the app's backend is out of reach; pausing and stopping work without the tracker (the host
// drains here), resuming and starting do not (they ask the tracker for the model first).

export function canPause(status: HostingStatus | null, reach: HostingReach): boolean {
  const phase = status?.phase
  return reach !== 'app' && (phase === 'serving' || phase === 'downloading' || phase === 'loading')
}

export function canResume(status: HostingStatus | null, reach: HostingReach): boolean {
  return reach === 'ok' && status?.phase === 'paused'
}

export function canStop(status: HostingStatus | null, reach: HostingReach): boolean {
  return reach !== 'app' && status !== null && status.phase !== 'idle' && status.phase !== 'stopping'
}

/** Why the buttons are off while something is out of reach, for the line under them; null when they work. */
export function reachNote(reach: HostingReach): string | null {
  if (reach === 'app')
    return 'The app does not answer, so this screen cannot change hosting; it reconnects once the app is back.'
  if (reach === 'tracker')
    return 'The tracker does not answer: pausing and stopping still work here; starting and resuming wait for it.'
  return null
}
