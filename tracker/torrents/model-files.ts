import type { ServerResponse } from 'node:http'
import parseTorrent from 'parse-torrent'
import { ModelId, NeuronError } from '../../protocol'
import { sendJson } from '../gateway/http'
import type { ModelCatalog } from '../models/catalog'

const TORRENT = '.torrent'

/**
 * `GET /models/<id>` (JSON: manifest, infohash, magnet link, torrent path) and `GET /models/<id>.torrent`
 * (the torrent itself): public over plain HTTP, so any BitTorrent client can fetch and seed a
 * model's artifacts. A model never changes, so neither answer does. `name` is the path after /models/.
 */
export async function serveModelFiles(catalog: ModelCatalog, name: string, res: ServerResponse): Promise<void> {
  const torrent = name.endsWith(TORRENT)
  let modelId: string
  try {
    modelId = decodeURIComponent(torrent ? name.slice(0, -TORRENT.length) : name)
  } catch {
    modelId = name
  }
  if (!ModelId.safeParse(modelId).success) {
    return sendJson(res, 400, {
      error: {
        code: 'bad_request',
        message: `${JSON.stringify(modelId.slice(0, 80))} is not a model id (lowercase letters, digits, . _ -).`,
      },
    })
  }
  try {
    const model = catalog.get(modelId)
    if (torrent) {
      res.writeHead(200, {
        'content-type': 'application/x-bittorrent',
        'content-disposition': `attachment; filename="${modelId}${TORRENT}"`,
        'cache-control': 'public, max-age=31536000, immutable',
      })
      res.end(model.torrent)
      return
    }
    sendJson(res, 200, {
      modelId,
      infoHash: model.infoHash,
      magnet: await magnetLink(model.torrent, model.infoHash, modelId),
      torrent: `/models/${modelId}${TORRENT}`,
      manifest: model.manifest,
    })
  } catch (error) {
    const e = error instanceof NeuronError ? error : new NeuronError('internal', String(error))
    sendJson(res, e.code === 'unknown_model' ? 404 : 500, { error: { code: e.code, message: e.message } })
  }
}

/** A magnet link naming the torrent's infohash, the model id and the trackers the torrent announces to. */
async function magnetLink(torrent: Buffer, infoHash: string, modelId: string): Promise<string> {
  // parse-torrent 11 is async; its @types describe an older, synchronous version.
  const { announce = [] } = (await parseTorrent(torrent)) as { announce?: string[] }
  const trackers = announce.map((url) => `&tr=${encodeURIComponent(url)}`).join('')
  return `magnet:?xt=urn:btih:${infoHash}&dn=${encodeURIComponent(modelId)}${trackers}`
}
