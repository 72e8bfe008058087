import type WebTorrent from 'webtorrent'
import type { Manifest, ManifestArtifact } from '../../protocol'
import type { Sha256Stream, Sha256Workers } from './sha256-workers'

/**
 * Most bytes of pieces held in memory while they wait for an earlier
 * piece of their file; past it, that file is read back instead.
 */
const MAX_HELD_BYTES = 64 << 20

interface FileDigest {
  readonly firstPiece: number
  readonly endPiece: number
  nextPiece: number
  readonly hash: Sha256Stream
  readonly held: Map<number, Uint8Array>
  /** Set when a piece could not be taken in order: the file must be read back to be checked. */
  gaveUp: boolean
  digest?: Promise<string>
}

/**
 * The manifest's sha256 of artifacts being fetched, computed from the pieces as BitTorrent stores
 * them (each after its SHA-1 check), so a fetched file is not read back from disk to be checked: that
 * read-back was a serial tail of every fetch. Artifacts end on piece boundaries, so each piece belongs
 * to one file. A piece that comes ahead of its file's next one waits in memory (bounded); a file whose
 * pieces were not all seen in order (resumed from disk, or too far out of order) has no digest here.
 * The order is kept here; the hashing itself runs on `workers`, off the main thread.
 */
export class StreamedSha256 {
  private readonly byPiece: FileDigest[] = []
  private readonly byFile = new Map<string, FileDigest>()
  private heldBytes = 0

  constructor(
    manifest: Manifest,
    wanted: readonly ManifestArtifact[],
    workers: Sha256Workers,
    private readonly maxHeldBytes = MAX_HELD_BYTES,
  ) {
    let offset = 0
    for (const a of manifest.artifacts) {
      const firstPiece = offset / manifest.pieceBytes
      offset += a.bytes
      if (!wanted.includes(a)) continue
      const file: FileDigest = {
        firstPiece,
        endPiece: offset / manifest.pieceBytes,
        nextPiece: firstPiece,
        hash: workers.open(),
        held: new Map(),
        gaveUp: false,
      }
      this.byFile.set(a.file, file)
      for (let p = firstPiece; p < file.endPiece; p++) this.byPiece[p] = file
    }
  }

  /**
   * Takes piece `index` as stored, and its bytes with it: no one may read them after (a piece that is a
   * whole ArrayBuffer moves to a worker without a copy and is left empty here).
   */
  add(index: number, piece: Uint8Array): void {
    const file = this.byPiece[index]
    if (file === undefined || file.gaveUp || index < file.nextPiece || file.held.has(index)) return
    if (index > file.nextPiece) {
      if (this.heldBytes + piece.byteLength > this.maxHeldBytes) this.giveUp(file)
      else {
        file.held.set(index, piece)
        this.heldBytes += piece.byteLength
      }
      return
    }
    file.hash.give(piece)
    file.nextPiece++
    for (let next = file.held.get(file.nextPiece); next !== undefined; next = file.held.get(file.nextPiece)) {
      file.held.delete(file.nextPiece)
      this.heldBytes -= next.byteLength
      file.hash.give(next)
      file.nextPiece++
    }
    if (file.nextPiece === file.endPiece) {
      file.digest = file.hash.digest()
      // Awaited by digestOf; until then a failed worker must not be an unhandled rejection.
      file.digest.catch(() => {})
    }
  }

  /**
   * The file's sha256 (hex) when every one of its pieces was taken, in order; otherwise undefined (and
   * its worker forgets it). Ask once per file, after its last piece.
   */
  async digestOf(file: string): Promise<string | undefined> {
    const f = this.byFile.get(file)
    if (f !== undefined && f.digest === undefined) f.hash.drop()
    return f?.digest
  }

  private giveUp(file: FileDigest): void {
    file.gaveUp = true
    file.hash.drop()
    for (const piece of file.held.values()) this.heldBytes -= piece.byteLength
    file.held.clear()
  }
}

interface ChunkStore {
  put(index: number, piece: Uint8Array, cb?: (error?: Error | null) => void): void
}

const listenersOf = new WeakMap<WebTorrent.Torrent, Set<(index: number, piece: Uint8Array) => void>>()

/**
 * Calls `listener` with every piece webtorrent stores for `t`, once it has passed its SHA-1 check
 * (webtorrent 3 puts only verified pieces; it has no event that carries the bytes) and is written.
 * The listener may keep the bytes and detach them: by then webtorrent is done with them (lib/torrent.js
 * drops its piece and serves requests for it only after the put; immediate-chunk-store lets go of it
 * before calling back), as long as no piece cache holds them (ArtifactStore adds torrents with
 * storeCacheSlots 0). Returns the function that stops it.
 */
export function onStoredPiece(t: WebTorrent.Torrent, listener: (index: number, piece: Uint8Array) => void): () => void {
  let listeners = listenersOf.get(t)
  if (listeners === undefined) {
    const all = new Set<(index: number, piece: Uint8Array) => void>()
    const store = (t as unknown as { store: ChunkStore }).store
    const put = store.put.bind(store)
    store.put = (index, piece, cb) => {
      put(index, piece, (error) => {
        cb?.(error)
        if (!error) for (const l of all) l(index, piece)
      })
    }
    listenersOf.set(t, all)
    listeners = all
  }
  const registered = listeners
  registered.add(listener)
  return () => registered.delete(listener)
}
