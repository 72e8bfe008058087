import { createHash, type Hash } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { mkdir, open, readFile, rename, rm, stat, statfs, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { isDeepStrictEqual } from 'node:util'
import { formatBytes } from '../../gguf/inspect'
import { type HubGgufFile, NeuronError } from '../../protocol'
import type { HubApi } from './hub-api'
import { hubGet } from './hub-http'

/** One file's download, as the CLI prints it and the app shows it. */
export interface HubDownloadProgress {
  readonly file: string
  readonly downloadedBytes: number
  readonly totalBytes: number
  /** Over the last few seconds; 0 before the first bytes. */
  readonly bytesPerSecond: number
  /** At that rate; null while it is unknown. */
  readonly secondsLeft: number | null
}

export interface HubDownloadOptions {
  readonly api: HubApi
  readonly repo: string
  /** A commit: a download resumed later must get the same bytes. */
  readonly revision: string
  readonly file: HubGgufFile
  /** The file lands at `<dir>/<its path in the repository>`. */
  readonly dir: string
  readonly onProgress?: (p: HubDownloadProgress) => void
  readonly log?: (line: string) => void
  readonly signal?: AbortSignal
  /** Tries in a row that bring no new byte before the download gives up (default 6). */
  readonly attempts?: number
  /** Wait before the first retry, doubled each time (default 1 000 ms). */
  readonly retryDelayMs?: number
  /** A connection that sends nothing for this long is dropped and resumed (default 60 s). */
  readonly idleMs?: number
}

/** What a `.part` file is the beginning of, kept beside it: a resume after a restart continues only the same file. */
interface PartRecord {
  readonly repo: string
  readonly path: string
  readonly sha256: string
  readonly bytes: number
}

/**
 * Downloads one file of a repository, resumable and verified: bytes go to `<file>.part` (with a record of what it is
 * the start of), a cut connection is resumed by an HTTP range, and the file gets its name only once its sha256 is the
 * Hub's. A wrong sha256 discards the part and fetches the file once more before giving up. Returns the file's path.
 */
export async function downloadHubFile(options: HubDownloadOptions): Promise<string> {
  const { file } = options
  const target = join(options.dir, ...file.path.split('/'))
  const done = await stat(target).catch(() => undefined)
  if (done?.isFile() && done.size === file.bytes) return target
  await mkdir(dirname(target), { recursive: true })
  for (let pass = 0; ; pass++) {
    const got = await fetchToPart(options, target).catch(async (error: unknown) => {
      // Bytes from a server that broke the protocol (more than the file, a range it did not ask for) are not kept.
      if (error instanceof NeuronError && error.code === 'hub_bad_answer') await discard(target)
      throw error
    })
    if (got === file.sha256) break
    await discard(target)
    const why =
      `${options.repo}/${file.path} failed sha256 ` +
      `(expected ${file.sha256.slice(0, 12)}…, got ${got.slice(0, 12)}…)`
    if (pass >= 1)
      throw new NeuronError('hub_checksum', `${why} twice; nothing kept. Try again later or another mirror`)
    options.log?.(`${why}; downloading it again`)
  }
  await rename(`${target}.part`, target)
  await rm(`${target}.part.json`, { force: true })
  return target
}

/** Failures that asking again may cure: the network, a busy or failing server, a cut transfer, a range refused. */
const RETRIED = ['hub_unreachable', 'hub_busy', 'hub_unavailable', 'hub_cut', 'hub_restart']

/** Fills `<target>.part` to the file's size, resuming where it stands; returns the sha256 of its bytes. */
async function fetchToPart(options: HubDownloadOptions, target: string): Promise<string> {
  const { file } = options
  const part = `${target}.part`
  const record: PartRecord = { repo: options.repo, path: file.path, sha256: file.sha256, bytes: file.bytes }
  const state: PartState = { record, have: await resumable(part, record), hash: createHash('sha256') }
  if (state.have > 0) await hashExisting(part, state.have, state.hash)
  await checkRoom(dirname(target), file.bytes - state.have, file.path)
  const rate = new Rate()
  const maxFailures = options.attempts ?? 6
  let failures = 0
  while (state.have < file.bytes) {
    const before = state.have
    try {
      await receive(options, part, state, rate)
    } catch (error) {
      if (options.signal?.aborted) throw options.signal.reason
      // A refusal (a 4xx other than 429) will not change by asking again.
      if (error instanceof NeuronError && !RETRIED.includes(error.code)) throw error
      if (error instanceof NeuronError && error.code === 'hub_restart') {
        state.have = 0
        state.hash = createHash('sha256')
        continue
      }
      const have = state.have
      failures = have > before ? 1 : failures + 1
      const why = error instanceof Error ? error.message : String(error)
      if (failures >= maxFailures) {
        throw new NeuronError(
          'hub_unreachable',
          `${options.repo}/${file.path} stopped at ${have} of ${file.bytes} bytes after ${failures} tries (${why}); ` +
            'run the same command again to resume',
          { downloadedBytes: have },
        )
      }
      const wait = (options.retryDelayMs ?? 1000) * 2 ** (failures - 1)
      options.log?.(`${file.path}: ${why}; resuming at ${have} of ${file.bytes} bytes in ${wait} ms`)
      await sleep(wait, options.signal)
    }
  }
  return state.hash.digest('hex')
}

async function discard(target: string): Promise<void> {
  await rm(`${target}.part`, { force: true })
  await rm(`${target}.part.json`, { force: true })
}

/** A part being filled: its length and the hash of its bytes so far. */
interface PartState {
  readonly record: PartRecord
  have: number
  hash: Hash
}

/** One GET from `state.have` on, appended to the part; `state` follows every byte written, even when the GET fails. */
async function receive(options: HubDownloadOptions, part: string, state: PartState, rate: Rate): Promise<void> {
  const { file } = options
  const { have, hash } = state
  const idle = new AbortController()
  const signals = options.signal ? [idle.signal, options.signal] : [idle.signal]
  const response = await hubGet(
    options.api.config,
    options.api.fileUrl(options.repo, options.revision, file.path),
    { repo: options.repo, file: file.path, revision: options.revision },
    { headers: have > 0 ? { range: `bytes=${have}-` } : {}, signal: AbortSignal.any(signals) },
  )
  const start =
    response.status === 206 ? Number(/^bytes (\d+)-/.exec(response.headers.get('content-range') ?? '')?.[1]) : 0
  if (start !== have) {
    // The server ignored the range (a 200) or answered another: start the file again rather than splice bytes.
    await response.body?.cancel()
    await rm(part, { force: true })
    if (have === 0)
      throw new NeuronError('hub_bad_answer', `${file.path}: the CDN answered a range starting at ${start}`)
    options.log?.(`${file.path}: the server does not resume at byte ${have}; starting the file again`)
    throw new NeuronError('hub_restart', 'restart')
  }
  // The record is written with the first byte: a refused download (gated, missing) leaves no file behind.
  if (have === 0) await writeFile(`${part}.json`, JSON.stringify(state.record))
  const out = await open(part, have > 0 ? 'a' : 'w')
  let timer = setTimeout(() => idle.abort(), options.idleMs ?? 60_000)
  let lastReport = 0
  try {
    const reader = response.body?.getReader()
    for (;;) {
      const next = reader === undefined ? { done: true as const } : await reader.read()
      if (next.done) break
      clearTimeout(timer)
      timer = setTimeout(() => idle.abort(), options.idleMs ?? 60_000)
      const chunk = next.value.subarray(0, Math.max(0, file.bytes - state.have))
      if (chunk.byteLength < next.value.byteLength) {
        await reader?.cancel()
        throw new NeuronError(
          'hub_bad_answer',
          `${file.path}: the server sent more than the ${file.bytes} bytes stated`,
        )
      }
      await out.write(chunk)
      hash.update(chunk)
      state.have += chunk.byteLength
      rate.add(chunk.byteLength)
      if (performance.now() - lastReport > 250 || state.have === file.bytes) {
        lastReport = performance.now()
        options.onProgress?.(progress(file, state.have, rate))
      }
    }
  } catch (error) {
    if (error instanceof NeuronError) throw error
    if (options.signal?.aborted) throw options.signal.reason
    throw new NeuronError('hub_cut', idle.signal.aborted ? 'no byte for a minute' : 'the connection was cut')
  } finally {
    clearTimeout(timer)
    await out.close()
  }
  if (state.have < file.bytes) throw new NeuronError('hub_cut', `the connection ended at byte ${state.have}`)
}

/** The length of a part that continues the same file; a stranger's part, or one past the end, is discarded. */
async function resumable(part: string, record: PartRecord): Promise<number> {
  const size = (await stat(part).catch(() => undefined))?.size ?? 0
  // The record is ours, written whole; anything else in its place (another file's, a torn or edited one) restarts.
  const kept: unknown = await readFile(`${part}.json`, 'utf8')
    .then((t) => JSON.parse(t))
    .catch(() => undefined)
  if (isDeepStrictEqual(kept, record) && size <= record.bytes) return size
  await rm(part, { force: true })
  return 0
}

function hashExisting(path: string, bytes: number, hash: Hash): Promise<void> {
  return new Promise((resolve, reject) => {
    const stream = createReadStream(path, { start: 0, end: bytes - 1 })
    stream.on('data', (chunk) => hash.update(chunk))
    stream.once('end', resolve)
    stream.once('error', reject)
  })
}

async function checkRoom(dir: string, needed: number, path: string): Promise<void> {
  const fs = await statfs(dir).catch(() => undefined)
  if (fs === undefined) return
  const free = fs.bavail * fs.bsize
  if (free < needed) {
    throw new NeuronError(
      'no_space',
      `${path} needs ${formatBytes(needed)} more but ${dir} has ${formatBytes(free)} free; ` +
        'free some space or pass --data-dir',
      { needed, free },
    )
  }
}

function progress(file: HubGgufFile, have: number, rate: Rate): HubDownloadProgress {
  const bytesPerSecond = rate.perSecond()
  return {
    file: file.path,
    downloadedBytes: have,
    totalBytes: file.bytes,
    bytesPerSecond,
    secondsLeft: bytesPerSecond > 0 ? (file.bytes - have) / bytesPerSecond : null,
  }
}

/** Bytes per second over the last five seconds. */
class Rate {
  private readonly samples: { at: number; bytes: number }[] = []

  add(bytes: number): void {
    const at = performance.now()
    this.samples.push({ at, bytes })
    while ((this.samples[0]?.at ?? at) < at - 5000) this.samples.shift()
  }

  perSecond(): number {
    const first = this.samples[0]
    const last = this.samples.at(-1)
    if (first === undefined || last === undefined || last.at - first.at < 50) return 0
    return (this.samples.reduce((s, x) => s + x.bytes, 0) - first.bytes) / ((last.at - first.at) / 1000)
  }
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason)
    const timer = setTimeout(resolve, ms)
    signal?.addEventListener('abort', () => {
      clearTimeout(timer)
      reject(signal.reason)
    })
  })
}
