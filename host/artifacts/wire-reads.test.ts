import { randomBytes } from 'node:crypto'
import Wire from 'bittorrent-protocol'
import { describe, expect, it } from 'vitest'
import './wire-reads'

const INFO_HASH = 'a'.repeat(40)

/** Wire.request as bittorrent-protocol calls back: with the block (its @types give the callback no bytes). */
type Request = (
  index: number,
  offset: number,
  length: number,
  cb: (error: Error | null, got: Uint8Array) => void,
) => void

/** Two wires joined so that everything A sends reaches B in `readBytes`-sized reads (B's replies go back whole). */
function joined(readBytes: number): { a: Wire.Wire; b: Wire.Wire } {
  const a = new Wire()
  const b = new Wire()
  a.on('data', (bytes: Uint8Array) => {
    for (let at = 0; at < bytes.length; at += readBytes) b.write(bytes.subarray(at, at + readBytes))
  })
  b.on('data', (bytes: Uint8Array) => a.write(bytes))
  b.on('handshake', () => b.handshake(INFO_HASH, 'b'.repeat(40)))
  a.handshake(INFO_HASH, 'a'.repeat(40))
  return { a, b }
}

/** B asks A for `block` at piece 0 once A unchokes it; resolves what B received. */
function fetchBlock(readBytes: number, block: Uint8Array): Promise<Uint8Array> {
  const { a, b } = joined(readBytes)
  a.on(
    'request',
    (_index: number, _offset: number, _length: number, cb: (error: Error | null, bytes: Uint8Array) => void) =>
      cb(null, block),
  )
  return new Promise((resolve, reject) => {
    b.on('unchoke', () =>
      (b.request as unknown as Request).call(b, 0, 0, block.length, (error, got) => {
        a.destroy()
        b.destroy()
        if (error) reject(error)
        else resolve(Uint8Array.from(got))
      }),
    )
    a.on('handshake', () => a.unchoke())
  })
}

describe('a wire reading a peer’s messages', () => {
  it.each([1, 1000, 1448, 16_397, 1 << 16])(
    'gets a 16 KiB block intact when the socket reads %i bytes at a time',
    async (readBytes) => {
      const block = randomBytes(16_384)
      expect(Buffer.from(await fetchBlock(readBytes, block)).equals(block)).toBe(true)
    },
  )
})
