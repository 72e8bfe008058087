import type WebTorrent from 'webtorrent'
import { type ManifestArtifact, NeuronError } from '../../protocol'
import type { FetchProgress } from './fetch-progress'
import { FileRates } from './file-rates'
import { isDone } from './torrent-client'

/** Fetch progress is reported at most this often (and once when the files are done). */
const PROGRESS_INTERVAL_MS = 250

/** Selects the wanted files and resolves when all are downloaded (and piece-verified by BitTorrent). */
export async function downloadFiles(
  t: WebTorrent.Torrent,
  wanted: readonly ManifestArtifact[],
  onProgress?: (p: FetchProgress) => void,
): Promise<void> {
  const files = wanted.map((artifact) => {
    const file = t.files.find((f) => f.name === artifact.file)
    if (file === undefined) throw new NeuronError('bad_torrent', `the torrent has no file ${artifact.file}.`)
    return file
  })
  const pending = files.filter((f) => !isDone(f))
  if (pending.length === 0) return
  const rates = new FileRates()
  const report = () => {
    for (const f of pending) {
      const bytesPerSecond = rates.rate(f.name, f.downloaded, performance.now())
      onProgress?.({
        file: f.name,
        downloadedBytes: f.downloaded,
        totalBytes: f.length,
        bytesPerSecond,
        peers: t.numPeers,
      })
    }
  }
  // 'download' fires per 16 KiB block, and a file's `downloaded` walks all its pieces (webtorrent lib/file.js):
  // reported on every block, that walk was a fifth of the main thread's busy time (bench:torrent-wan's profile).
  let reportedAt = 0
  const onBlock = () => {
    const now = performance.now()
    if (now - reportedAt < PROGRESS_INTERVAL_MS) return
    reportedAt = now
    report()
  }
  t.on('download', onBlock)
  try {
    await Promise.all(
      pending.map(
        (file) =>
          new Promise<void>((resolve) => {
            file.once('done', () => resolve())
            file.select()
          }),
      ),
    )
  } finally {
    t.off('download', onBlock)
  }
  report()
}
