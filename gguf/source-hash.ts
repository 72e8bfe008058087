import { Worker } from 'node:worker_threads'

// Plain CommonJS so the worker needs no TypeScript loader; it runs on the second core while
// the packer copies, so hashing the source costs no extra wall time.
const HASH_FILE = `
const { parentPort, workerData } = require('node:worker_threads')
const fs = require('node:fs')
const hash = require('node:crypto').createHash('sha256')
const buf = Buffer.allocUnsafe(1 << 22)
let total = 0
for (const path of workerData.paths) {
  const fd = fs.openSync(path, 'r')
  let position = 0
  for (;;) {
    const n = fs.readSync(fd, buf, 0, buf.length, position)
    if (n === 0) break
    hash.update(buf.subarray(0, n))
    position += n
  }
  fs.closeSync(fd)
  total += position
}
parentPort.postMessage({ sha256: hash.digest('hex'), bytes: total })
`

/** sha256 of a whole file (or of several, one after the other: a split model's parts), computed in a worker thread. */
export function sha256File(path: string | readonly string[]): Promise<{ sha256: string; bytes: number }> {
  const paths = typeof path === 'string' ? [path] : [...path]
  return new Promise((resolve, reject) => {
    const worker = new Worker(HASH_FILE, { eval: true, workerData: { paths } })
    worker.once('message', resolve)
    worker.once('error', reject)
    worker.once('exit', (code) => {
      if (code !== 0) reject(new Error(`hashing ${paths.join(', ')} stopped with exit code ${code}`))
    })
  })
}
