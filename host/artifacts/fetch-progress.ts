import type { Manifest } from '../../protocol'

/** One file's fetch, as a store reports it while it downloads. */
export interface FetchProgress {
  readonly file: string
  readonly downloadedBytes: number
  readonly totalBytes: number
  readonly bytesPerSecond: number
  readonly peers: number
}

/** Per-file fetch progress as one fraction of `files`' bytes, handed to `report` at most every `everyMs`. */
export function overallProgress(
  manifest: Manifest,
  files: readonly string[],
  report: (fraction: number) => void,
  everyMs = 500,
): (p: FetchProgress) => void {
  const total = manifest.artifacts.filter((a) => files.includes(a.file)).reduce((s, a) => s + a.bytes, 0)
  const done = new Map<string, number>()
  let lastReport = 0
  return (p) => {
    done.set(p.file, p.downloadedBytes)
    const now = Date.now()
    if (now - lastReport <= everyMs) return
    lastReport = now
    report(Math.min(1, [...done.values()].reduce((s, b) => s + b, 0) / total))
  }
}
