// Draws Neuron's icon (the geometry of build/icon.svg) and writes every raster the app and its
// installers use: build/icon.{png,ico,icns} and resources/{icon,tray,tray@2x}.png.
// Run: npx tsx build/icons.ts
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { deflateSync } from 'node:zlib'

type Rgba = [number, number, number, number]

const ring = Array.from({ length: 6 }, (_, k) => {
  const a = ((-90 + k * 60) * Math.PI) / 180
  return [0.5 + 0.27 * Math.cos(a), 0.5 + 0.27 * Math.sin(a)] as const
})
const from: Rgba = [79, 70, 229, 255] // #4f46e5
const to: Rgba = [8, 145, 178, 255] // #0891b2

function roundedRect(x: number, y: number, margin: number, radius: number): number {
  const qx = Math.abs(x - 0.5) - (0.5 - margin - radius)
  const qy = Math.abs(y - 0.5) - (0.5 - margin - radius)
  return Math.hypot(Math.max(qx, 0), Math.max(qy, 0)) + Math.min(Math.max(qx, qy), 0) - radius
}
const circle = (x: number, y: number, cx: number, cy: number, r: number) => Math.hypot(x - cx, y - cy) - r
function segment(x: number, y: number, ax: number, ay: number, bx: number, by: number, halfWidth: number): number {
  const [px, py, dx, dy] = [x - ax, y - ay, bx - ax, by - ay]
  const t = Math.max(0, Math.min(1, (px * dx + py * dy) / (dx * dx + dy * dy)))
  return Math.hypot(px - t * dx, py - t * dy) - halfWidth
}

/** Source-over of `color` at `alpha` onto `dst`. */
function over(dst: Rgba, color: Rgba, alpha: number): Rgba {
  const a = (color[3] / 255) * alpha
  const outA = a + (dst[3] / 255) * (1 - a)
  if (outA === 0) return [0, 0, 0, 0]
  const mix = (i: number) => ((color[i] ?? 0) * a + (dst[i] ?? 0) * (dst[3] / 255) * (1 - a)) / outA
  return [mix(0), mix(1), mix(2), outA * 255]
}

function render(size: number): Buffer {
  const px = 1 / size
  const cover = (d: number) => Math.max(0, Math.min(1, 0.5 - d / px))
  const rgba = Buffer.alloc(size * size * 4)
  for (let j = 0; j < size; j++) {
    for (let i = 0; i < size; i++) {
      const [x, y] = [(i + 0.5) * px, (j + 0.5) * px]
      const t = Math.max(0, Math.min(1, (x + y) / 2))
      const bg: Rgba = [
        from[0] + (to[0] - from[0]) * t,
        from[1] + (to[1] - from[1]) * t,
        from[2] + (to[2] - from[2]) * t,
        255,
      ]
      let c = over([0, 0, 0, 0], bg, cover(roundedRect(x, y, 0.06, 0.2)))
      const white: Rgba = [255, 255, 255, 255]
      for (let k = 0; k < ring.length; k++) {
        const [ax, ay] = ring[k] ?? [0, 0]
        const [bx, by] = ring[(k + 1) % ring.length] ?? [0, 0]
        c = over(c, white, 0.55 * cover(segment(x, y, ax, ay, bx, by, Math.max(0.007, px * 0.6))))
        c = over(c, white, 0.9 * cover(segment(x, y, 0.5, 0.5, ax, ay, Math.max(0.011, px * 0.7))))
      }
      for (const [cx, cy] of ring) c = over(c, white, cover(circle(x, y, cx, cy, 0.05)))
      c = over(c, white, cover(circle(x, y, 0.5, 0.5, 0.095)))
      c = over(c, bg, cover(circle(x, y, 0.5, 0.5, 0.045)))
      rgba.set(c.map(Math.round), (j * size + i) * 4)
    }
  }
  return png(size, rgba)
}

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})
function crc32(buf: Buffer): number {
  let c = 0xffffffff
  for (const b of buf) c = (crcTable[(c ^ b) & 0xff] ?? 0) ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}
function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8)
  head.writeUInt32BE(data.length, 0)
  head.write(type, 4, 'latin1')
  const crc = Buffer.alloc(4)
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])), 0)
  return Buffer.concat([head, data, crc])
}
function png(size: number, rgba: Buffer): Buffer {
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(size, 0)
  ihdr.writeUInt32BE(size, 4)
  ihdr.set([8, 6, 0, 0, 0], 8) // 8-bit RGBA, no interlace
  const rows = Buffer.alloc(size * (size * 4 + 1))
  for (let j = 0; j < size; j++) rgba.copy(rows, j * (size * 4 + 1) + 1, j * size * 4, (j + 1) * size * 4)
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a])
  return Buffer.concat([
    signature,
    chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(rows, { level: 9 })),
    chunk('IEND', Buffer.alloc(0)),
  ])
}

/** Windows .ico holding PNG images (Vista and later read them). */
function ico(images: Array<[number, Buffer]>): Buffer {
  const header = Buffer.alloc(6 + 16 * images.length)
  header.writeUInt16LE(1, 2)
  header.writeUInt16LE(images.length, 4)
  let offset = header.length
  for (const [k, [size, data]] of images.entries()) {
    const e = 6 + 16 * k
    header.writeUInt8(size >= 256 ? 0 : size, e)
    header.writeUInt8(size >= 256 ? 0 : size, e + 1)
    header.writeUInt16LE(1, e + 4)
    header.writeUInt16LE(32, e + 6)
    header.writeUInt32LE(data.length, e + 8)
    header.writeUInt32LE(offset, e + 12)
    offset += data.length
  }
  return Buffer.concat([header, ...images.map(([, data]) => data)])
}

/** macOS .icns holding PNG images, one per OSType. */
function icns(images: Array<[string, Buffer]>): Buffer {
  const entries = images.map(([type, data]) => {
    const head = Buffer.alloc(8)
    head.write(type, 0, 'latin1')
    head.writeUInt32BE(data.length + 8, 4)
    return Buffer.concat([head, data])
  })
  const head = Buffer.alloc(8)
  head.write('icns', 0, 'latin1')
  head.writeUInt32BE(8 + entries.reduce((n, e) => n + e.length, 0), 4)
  return Buffer.concat([head, ...entries])
}

const root = join(import.meta.dirname, '..')
const sizes = new Map([16, 24, 32, 48, 64, 128, 256, 512, 1024].map((s) => [s, render(s)]))
const at = (s: number) => sizes.get(s) ?? render(s)
writeFileSync(join(root, 'build/icon.png'), at(512))
writeFileSync(join(root, 'build/icon.ico'), ico([16, 24, 32, 48, 64, 128, 256].map((s) => [s, at(s)])))
const icnsTypes: Array<[string, number]> = [
  ['icp4', 16],
  ['icp5', 32],
  ['ic11', 32],
  ['ic12', 64],
  ['ic07', 128],
  ['ic13', 256],
  ['ic08', 256],
  ['ic14', 512],
  ['ic09', 512],
  ['ic10', 1024],
]
writeFileSync(join(root, 'build/icon.icns'), icns(icnsTypes.map(([type, s]) => [type, at(s)])))
writeFileSync(join(root, 'resources/icon.png'), at(256))
writeFileSync(join(root, 'resources/tray.png'), at(32))
writeFileSync(join(root, 'resources/tray@2x.png'), at(64))
