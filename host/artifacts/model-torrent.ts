import { join } from 'node:path'
import createTorrent from 'create-torrent'
import parseTorrent, { toTorrentFile } from 'parse-torrent'
import type { Manifest } from '../../protocol'

/** Fixed so the same artifacts always make the same .torrent bytes, not only the same infohash. */
const CREATION_DATE = new Date('2026-01-01T00:00:00Z')

/**
 * The one torrent carrying a model's artifacts: named by the model id, one file per artifact in
 * manifest order, pieces of the manifest's size (artifacts end on piece boundaries). The infohash
 * depends only on these, so it is deterministic.
 */
export function createModelTorrent(dir: string, manifest: Manifest, announce: readonly string[]): Promise<Buffer> {
  const files = manifest.artifacts.map((a) => join(dir, a.file))
  return new Promise((resolve, reject) => {
    createTorrent(
      files,
      {
        name: manifest.modelId,
        pieceLength: manifest.pieceBytes,
        creationDate: CREATION_DATE,
        createdBy: 'neuron',
        comment: `${manifest.name} (${manifest.architecture}, ${manifest.nLayer} blocks)`,
        announceList: [announce.slice()],
        urlList: [],
      },
      (error: Error | null, torrent: Uint8Array) => (error ? reject(error) : resolve(Buffer.from(torrent))),
    )
  })
}

/** The torrent announcing to `url` alone (the infohash is the same: announce lists are outside the info dict). */
export async function announcingTo(torrent: Buffer, url: string): Promise<Buffer> {
  // parse-torrent 11 is async; its @types describe an older, synchronous version.
  const parsed = (await parseTorrent(torrent)) as { announce: string[] }
  return Buffer.from(toTorrentFile({ ...parsed, announce: [url] }))
}
