import type { IncomingMessage, ServerResponse } from 'node:http'
import { isIPv4 } from 'node:net'
import bencode from 'bencode'
import { addressScope, plainAddress } from './address-scope'

/**
 * Peers that announced from this computer's loopback (an app's own publisher and host, beside its embedded tracker)
 * are at the address the asking peer reached the tracker on: an announce answer to a peer elsewhere says so, instead
 * of 127.0.0.1, which is the asker itself. bittorrent-tracker records the address it saw; this rewrites its answer.
 */
export function showColocatedPeers(req: IncomingMessage, res: ServerResponse): void {
  const here = plainAddress(req.socket.localAddress ?? '')
  if (
    addressScope(plainAddress(req.socket.remoteAddress ?? '')) === 'loopback' ||
    !isIPv4(here) ||
    addressScope(here) === 'loopback'
  )
    return
  const hereBytes = Uint8Array.from(here.split('.').map(Number))
  const end = res.end.bind(res) as (chunk?: unknown) => ServerResponse
  res.end = ((chunk?: unknown) =>
    end(chunk instanceof Uint8Array ? withPeersAt(chunk, hereBytes) : chunk)) as ServerResponse['end']
}

/** The bencoded announce answer with each compact loopback peer (4 address bytes, 2 port bytes) moved to `here`. */
function withPeersAt(body: Uint8Array, here: Uint8Array): Uint8Array {
  let answer: { peers?: unknown }
  try {
    answer = bencode.decode(body) as { peers?: unknown }
  } catch {
    return body
  }
  const peers = answer.peers
  if (!(peers instanceof Uint8Array) || peers.byteLength % 6 !== 0) return body
  const moved = Uint8Array.from(peers)
  for (let at = 0; at < moved.byteLength; at += 6) if (moved[at] === 127) moved.set(here, at)
  return bencode.encode({ ...answer, peers: moved })
}
