/** Display formatting shared by the screens: pure, so each rule is tested once. */

const GB = 1e9

export function formatBytes(bytes: number): string {
  if (bytes >= 1e12) return `${(bytes / 1e12).toFixed(2)} TB`
  if (bytes >= GB) return `${(bytes / GB).toFixed(bytes >= 100 * GB ? 0 : 1)} GB`
  if (bytes >= 1e6) return `${(bytes / 1e6).toFixed(1)} MB`
  if (bytes >= 1e3) return `${(bytes / 1e3).toFixed(0)} kB`
  return `${bytes} B`
}

export function formatRate(bytesPerSecond: number): string {
  return `${formatBytes(bytesPerSecond)}/s`
}

export function formatGb(bytes: number): string {
  return `${(bytes / GB).toFixed(1)} GB`
}

/** Credits from micro-credits: small balances keep 6 significant digits so a first receipt is visible. */
export function formatCredits(micro: number): string {
  const credits = micro / 1e6
  const magnitude = Math.abs(credits)
  if (magnitude === 0) return '0'
  if (magnitude < 1) return Number(credits.toPrecision(6)).toString()
  return credits.toLocaleString('en-US', { maximumFractionDigits: 4 })
}

export function formatDuration(seconds: number): string {
  const s = Math.max(0, Math.floor(seconds))
  const h = Math.floor(s / 3600)
  const m = Math.floor((s % 3600) / 60)
  const rest = s % 60
  if (h > 0) return `${h}h ${String(m).padStart(2, '0')}m ${String(rest).padStart(2, '0')}s`
  if (m > 0) return `${m}m ${String(rest).padStart(2, '0')}s`
  return `${rest}s`
}

export function formatBlocks(blocks: readonly [number, number]): string {
  return `[${blocks[0]}, ${blocks[1]})`
}

export function formatNumber(value: number): string {
  return value.toLocaleString('en-US')
}

export function formatPercent(fraction: number): string {
  return `${Math.round(fraction * 1000) / 10}%`
}

export function shortId(id: string): string {
  return id.slice(0, 8)
}

/** A chart's time axis and tooltip: the user's locale, to the minute. */
export function formatHour(ms: number): string {
  return new Date(ms).toLocaleString(undefined, { month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit' })
}

export function formatTokensPerSecond(value: number): string {
  return `${value >= 10 ? value.toFixed(0) : value.toFixed(1)} tok/s`
}
