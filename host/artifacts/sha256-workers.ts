import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'

/**
 * The worker's whole program, plain JavaScript evaluated as a script: a worker given a .ts file would
 * need tsx's loader, which the app, the CLI and vitest each provide differently. One sha256 state per
 * stream id; `update` takes buffers transferred (not copied) from the main thread.
 */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads')
const { createHash } = require('node:crypto')
const streams = new Map()
parentPort.on('message', (m) => {
  if (m.op === 'update') {
    let hash = streams.get(m.id)
    if (hash === undefined) streams.set(m.id, (hash = createHash('sha256')))
    for (const bytes of m.buffers) hash.update(new Uint8Array(bytes))
  } else if (m.op === 'digest') {
    const hash = streams.get(m.id) ?? createHash('sha256')
    streams.delete(m.id)
    parentPort.postMessage({ id: m.id, digest: hash.digest('hex') })
  } else if (m.op === 'drop') streams.delete(m.id)
})
`

/** One file's sha256, fed in order on the main thread and computed on a worker. */
export interface Sha256Stream {
  /** Hashes a copy of `bytes` (the caller may reuse or keep them). */
  update(bytes: Uint8Array): void
  /**
   * Hashes `bytes`, which the caller hands over and never reads again: when they are a whole (not shared)
   * ArrayBuffer, its memory moves to the worker without a copy and `bytes` is left detached (empty);
   * otherwise they are copied, as by update.
   */
  give(bytes: Uint8Array): void
  /** The hex digest of everything updated; the stream is finished. */
  digest(): Promise<string>
  /** Forgets the stream without a digest. */
  drop(): void
}

/**
 * Bytes gathered before one message to a worker: a message per 256 KiB piece cost the main thread about as much as
 * hashing it (copy, postMessage).
 */
const BATCH_BYTES = 2 << 20

interface Waiting {
  readonly resolve: (digest: string) => void
  readonly reject: (error: Error) => void
}

/**
 * A small pool of worker threads computing sha256s, so a leecher's main thread (webtorrent's, which
 * also parses the wire, checks every piece's SHA-1 and schedules requests) spends no time on the
 * manifest's hash: one sha256 costs about 0.6 CPU-seconds per GB, a tenth of what the main thread spent
 * per GB fetched (bench:torrent). A stream stays on one worker (its bytes must be hashed in order);
 * streams are spread over the workers. Workers start with the first stream and end at close().
 */
export class Sha256Workers {
  private readonly workers: Worker[] = []
  private readonly waiting = new Map<number, Waiting>()
  private nextId = 0
  private closed = false
  /** Set when a worker failed: its streams are lost, so every digest after it is refused. */
  private broken: Error | undefined

  constructor(private readonly size = Math.max(1, Math.min(2, availableParallelism() - 1))) {}

  open(): Sha256Stream {
    if (this.closed) throw new Error('the sha256 workers are closed; open a new ArtifactStore to fetch again.')
    const id = this.nextId++
    const worker = this.workerFor(id)
    let finished = false
    // Buffers of this stream's bytes, in order, each ours alone:
    // sent (transferred) together once they hold BATCH_BYTES.
    let pending: ArrayBuffer[] = []
    let pendingBytes = 0
    const send = () => {
      if (pending.length === 0) return
      worker.postMessage({ op: 'update', id, buffers: pending }, pending)
      pending = []
      pendingBytes = 0
    }
    const take = (buffer: ArrayBuffer) => {
      if (finished) throw new Error('this sha256 stream is already finished.')
      pending.push(buffer)
      pendingBytes += buffer.byteLength
      if (pendingBytes >= BATCH_BYTES) send()
    }
    const copyOf = (bytes: Uint8Array) => {
      const copy = new Uint8Array(bytes.byteLength)
      copy.set(bytes)
      return copy.buffer
    }
    return {
      update: (bytes) => take(copyOf(bytes)),
      give: (bytes) => {
        const whole =
          bytes.buffer instanceof ArrayBuffer && bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength
        take(whole ? (bytes.buffer as ArrayBuffer) : copyOf(bytes))
      },
      digest: () => {
        finished = true
        send()
        return new Promise<string>((resolve, reject) => {
          if (this.closed) return reject(new Error('the sha256 workers closed before the digest was computed.'))
          if (this.broken !== undefined) return reject(this.broken)
          this.waiting.set(id, { resolve, reject })
          worker.postMessage({ op: 'digest', id })
        })
      },
      drop: () => {
        if (finished || this.closed) return
        finished = true
        pending = []
        worker.postMessage({ op: 'drop', id })
      },
    }
  }

  /** Ends every worker; digests not yet computed are rejected. */
  async close(): Promise<void> {
    this.closed = true
    this.failAll(new Error('the sha256 workers closed before the digest was computed.'))
    await Promise.all(this.workers.splice(0).map((w) => w.terminate()))
  }

  /** How many worker threads are running (for tests: none after close). */
  get threads(): number {
    return this.workers.length
  }

  private workerFor(id: number): Worker {
    if (this.workers.length < this.size) {
      // execArgv: [], not the parent's: a --input-type=module there would make this script ESM, without require.
      const worker = new Worker(WORKER_SOURCE, { eval: true, execArgv: [] })
      worker.on('message', (m: { id: number; digest: string }) => {
        const w = this.waiting.get(m.id)
        this.waiting.delete(m.id)
        w?.resolve(m.digest)
      })
      worker.on('error', (e) => {
        this.broken = new Error(`a sha256 worker failed (${e.message}); the file is read back from disk instead.`)
        this.failAll(this.broken)
      })
      this.workers.push(worker)
      return worker
    }
    return this.workers[id % this.workers.length] as Worker
  }

  private failAll(error: Error): void {
    for (const w of this.waiting.values()) w.reject(error)
    this.waiting.clear()
  }
}
