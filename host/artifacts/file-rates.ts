/**
 * How far back a file's download speed looks: long enough to
 * smooth BitTorrent's bursts, short enough to follow a stall.
 */
const WINDOW_MS = 5000

/**
 * Each file's own download speed, from its downloaded bytes over the last few seconds. The torrent's speed is
 * the sum over every file it fetches at once; shown on each file's row, every row read the total.
 */
export class FileRates {
  private readonly samples = new Map<string, { at: number; bytes: number }[]>()

  /** Bytes per second `file` took over the window ending at `at` (ms); 0 until there are two samples. */
  rate(file: string, bytes: number, at: number): number {
    const samples = this.samples.get(file) ?? []
    samples.push({ at, bytes })
    while (samples.length > 2 && at - (samples[1] as { at: number }).at >= WINDOW_MS) samples.shift()
    this.samples.set(file, samples)
    const first = samples[0] as { at: number; bytes: number }
    const seconds = (at - first.at) / 1000
    return seconds > 0 ? Math.max(0, bytes - first.bytes) / seconds : 0
  }
}
