import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Server as BitTorrentTracker } from 'bittorrent-tracker'
import type { ChallengeIssuer } from '../access/auth'
import { type Admission, namesTorrents, refuseStranger } from '../access/private-swarm'
import type { Gateway } from '../gateway/gateway'
import { sendJson } from '../gateway/http'
import type { ModelCatalog } from '../models/catalog'
import { showColocatedPeers } from '../reachability/colocated-peers'
import { serveModelFiles } from '../torrents/model-files'
import { serveScrape } from '../torrents/scrape'

/** What the tracker's plain HTTP routes answer from. */
export interface HttpRouteDeps {
  readonly admission: Pick<Admission, 'admitsTorrentPeer'>
  readonly bittorrent: BitTorrentTracker
  readonly catalog: ModelCatalog
  readonly gateway: Pick<Gateway, 'handles' | 'handle'>
  readonly issuer: Pick<ChallengeIssuer, 'issue'>
  onlineHosts(): number
}

/**
 * The tracker's HTTP port beside Socket.IO: the BitTorrent tracker, model files, the gateway, login challenges, health.
 */
export function routeHttp(d: HttpRouteDeps, req: IncomingMessage, res: ServerResponse): void {
  const path = (req.url ?? '/').split('?')[0] ?? '/'
  if (namesTorrents(path) && !d.admission.admitsTorrentPeer(req)) refuseStranger(req, res, path)
  else if (path === '/announce') {
    showColocatedPeers(req, res)
    d.bittorrent.onHttpRequest(req, res, { action: 'announce' })
  } else if (path === '/scrape') serveScrape(req, res, d.bittorrent.torrents)
  else if (req.method === 'GET' && path.startsWith('/models/'))
    void serveModelFiles(d.catalog, path.slice('/models/'.length), res)
  else if (d.gateway.handles(path)) void d.gateway.handle(req, res, path)
  else if (req.method === 'GET' && path === '/auth/challenge')
    d.issuer.issue().then(
      (challenge) => sendJson(res, 200, challenge),
      (e: Error) =>
        sendJson(res, 503, {
          error: { code: 'unavailable', message: `no challenge can be issued now (${e.message}); retry shortly.` },
        }),
    )
  else if (req.method === 'GET' && path === '/health') sendJson(res, 200, { ok: true, hosts: d.onlineHosts() })
  else sendJson(res, 404, { error: { code: 'not_found', message: `no route ${req.method} ${path}` } })
}
