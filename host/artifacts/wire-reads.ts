// How webtorrent's wire (bittorrent-protocol 5.0.9) takes the bytes a socket reads, without its quadratic gluing.
// Its `_write` glues everything buffered into one new array on every read until a message is complete: a 16 KiB
// block arriving in ~1.4 KB reads (a paced WAN link: bench:torrent-wan) is copied about 6 times over, and at
// 100 Mbit/s that gluing was most of our main thread's 20 CPU-s per GB. Here the reads are kept as they come and
// a message's bytes are glued once, only when it spans reads (a message inside one read is a view of it, as before).
// Installed once, on the prototype webtorrent's wires share; every other case (encrypted handshakes) is left to
// the original. Check it against the version pinned in package-lock.json when bittorrent-protocol changes.
import Wire from 'bittorrent-protocol'

/** bittorrent-protocol's parser state (lib index.js: `_parse`, `_write`, `_processBuffer`); its @types omit it. */
interface WireParser {
  _buffer: Uint8Array[]
  _bufferSize: number
  _parserSize: number
  _parser: (bytes: Uint8Array) => void
  _cryptoSyncPattern: Uint8Array | null
  _pePending: boolean
  _write(data: Uint8Array, cb: (error: Error | null) => void): void
}

const proto = Wire.prototype as unknown as WireParser & { _neuronReads?: true }
const hasParser =
  typeof proto._write === 'function' &&
  typeof (proto as unknown as { _processBuffer?: unknown })._processBuffer === 'function'
if (hasParser && proto._neuronReads !== true) {
  const original = proto._write
  proto._neuronReads = true
  proto._write = function (this: WireParser, data, cb) {
    // An encryption handshake searches the glued buffer for its pattern: the original does that.
    if (this._cryptoSyncPattern !== null || this._pePending) return original.call(this, data, cb)
    this._buffer.push(data)
    this._bufferSize += data.length
    while (this._bufferSize >= this._parserSize && this._cryptoSyncPattern === null && !this._pePending) {
      this._parser(this._parserSize === 0 ? new Uint8Array() : take(this, this._parserSize))
    }
    cb(null)
  }
}

/** The next `size` buffered bytes: a view when one read holds them, else glued once. */
function take(wire: WireParser, size: number): Uint8Array {
  wire._bufferSize -= size
  const first = wire._buffer[0] as Uint8Array
  if (first.length >= size) {
    if (first.length === size) wire._buffer.shift()
    else wire._buffer[0] = first.subarray(size)
    return first.subarray(0, size)
  }
  const message = new Uint8Array(size)
  for (let filled = 0; filled < size; ) {
    const chunk = wire._buffer[0] as Uint8Array
    const n = Math.min(chunk.length, size - filled)
    message.set(n === chunk.length ? chunk : chunk.subarray(0, n), filled)
    filled += n
    if (n === chunk.length) wire._buffer.shift()
    else wire._buffer[0] = chunk.subarray(n)
  }
  return message
}
