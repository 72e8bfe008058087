// How webtorrent 3.0.21 joins a peer's socket to its wire, without four stream stages per socket read. Its
// lib/peer.js setThrottlePipes pipes socket -> download throttle -> 'download' counter -> wire -> upload throttle ->
// 'upload' counter -> socket: each stage a streamx Transform that every read passes through, even with no speed
// limit set (the throttles then pass bytes on). On a paced link a read is one ~1.4 KB frame, so those stages were
// paid some 700,000 times per GB (bench:torrent-wan). With no limit, the socket is piped to the wire directly and
// the counters (which feed webtorrent's speed meters and our fetch progress) listen to 'data'. With a limit (we set
// none: ArtifactStore never calls throttleDownload/throttleUpload), webtorrent's own pipes are kept.
// Installed once, on the prototype; check it against lib/peer.js when webtorrent changes.

interface Stream {
  on(event: 'data', listener: (chunk: Uint8Array) => void): void
}
interface PeerInternals {
  conn: Stream
  wire: Stream
  destroyed: boolean
  throttleGroups: { down: { getEnabled(): boolean }; up: { getEnabled(): boolean } }
  emit(event: 'download' | 'upload', bytes: number): void
  setThrottlePipes(): void
}
type Pipeline = (...streams: Stream[]) => unknown

// Module names in variables: webtorrent's lib/ and streamx have no types of their own, and their shapes are the ones above.
const PEER_MODULE = 'webtorrent/lib/peer.js'
const STREAMX = 'streamx'
let installed: Promise<void> | undefined

/** Replaces webtorrent's per-peer pipes, once per process; resolves when done (before any peer connects). */
export function installPeerPipes(): Promise<void> {
  installed ??= (async () => {
    const { default: Peer } = (await import(PEER_MODULE)) as { default: { prototype: PeerInternals } }
    const { pipeline } = (await import(STREAMX)) as { pipeline: Pipeline }
    const original = Peer.prototype.setThrottlePipes
    if (typeof original !== 'function') throw new Error('webtorrent has no Peer.setThrottlePipes; check host/artifacts/peer-pipes.ts against its version.')
    Peer.prototype.setThrottlePipes = function (this: PeerInternals) {
      if (this.throttleGroups.down.getEnabled() || this.throttleGroups.up.getEnabled()) return original.call(this)
      this.conn.on('data', (chunk) => {
        if (!this.destroyed) this.emit('download', chunk.length)
      })
      this.wire.on('data', (chunk) => {
        if (!this.destroyed) this.emit('upload', chunk.length)
      })
      pipeline(this.conn, this.wire, this.conn)
    }
  })()
  return installed
}
