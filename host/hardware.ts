import { open, readFile, rm, statfs, writeFile } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import { join } from 'node:path'
import si from 'systeminformation'
import { HardwareProfile } from '../protocol'

const PROBE_BYTES = 64 * 1024 * 1024
/** A cached profile is re-measured after a day: RAM and disk free change, hardware rarely. */
const MAX_AGE_MS = 24 * 60 * 60 * 1000

interface CachedProfile {
  readonly measuredAt: number
  readonly profile: HardwareProfile
}

/** The cache files this process has read or written, so a repeated call does not read one again. */
const remembered = new Map<string, CachedProfile>()

/**
 * What this computer can give the swarm: CPU, RAM, GPUs and VRAM, disk free and read speed,
 * memory bandwidth. Measured once and cached in the data dir (`hardware.json`); available memory
 * is read afresh on every call.
 */
export async function hardwareProfile(
  dataDir: string,
  options: { threads?: number; refresh?: boolean } = {},
): Promise<HardwareProfile> {
  const cachePath = join(dataDir, 'hardware.json')
  if (!options.refresh) {
    const fresh = (c: CachedProfile | undefined) =>
      c !== undefined && Date.now() - c.measuredAt < MAX_AGE_MS ? c : undefined
    const cached = fresh(remembered.get(cachePath)) ?? fresh(await readCache(cachePath))
    if (cached !== undefined) {
      remembered.set(cachePath, cached)
      const { profile } = cached
      return {
        ...profile,
        threads: options.threads ?? profile.threads,
        memory: { ...profile.memory, availableBytes: (await si.mem()).available },
      }
    }
  }
  const [cpu, flags, mem, graphics, fs] = await Promise.all([
    si.cpu(),
    si.cpuFlags(),
    si.mem(),
    si.graphics(),
    statfs(dataDir),
  ])
  const profile = HardwareProfile.parse({
    cpu: {
      model: `${cpu.manufacturer} ${cpu.brand}`.trim(),
      cores: cpu.cores,
      physicalCores: cpu.physicalCores,
      flags: flags.split(/\s+/).filter(Boolean),
    },
    memory: { totalBytes: mem.total, availableBytes: mem.available },
    gpus: graphics.controllers
      .filter((g) => (g.vram ?? 0) > 0)
      .map((g) => ({
        vendor: g.vendor ?? '',
        model: g.model ?? '',
        vramBytes: Math.round((g.vram ?? 0) * 1024 * 1024),
      })),
    disk: {
      path: dataDir,
      freeBytes: fs.bavail * fs.bsize,
      readBytesPerSecond: Math.round(await diskReadSpeed(dataDir)),
    },
    memoryBytesPerSecond: Math.round(memoryBandwidth()),
    threads: options.threads ?? defaultThreads(cpu.physicalCores || availableParallelism(), availableParallelism()),
  })
  const measured: CachedProfile = { measuredAt: Date.now(), profile }
  await writeFile(cachePath, JSON.stringify(measured, null, 2))
  remembered.set(cachePath, measured)
  return profile
}

/**
 * Runtime threads when the user sets none: one per physical core, less one on machines of up to 4
 * cores. ggml's workers spin at every op's barrier, so when they take every core the process's own
 * event loop (socket I/O, the tracker and the UI backend in the app) preempts one of them and every op
 * waits for it. bench:app-threads measures a chat in the app at each count (figures in docs/architecture.md).
 */
export function defaultThreads(physicalCores: number, logicalCores: number): number {
  const cores = Math.max(1, Math.min(physicalCores, logicalCores))
  return cores <= 4 ? Math.max(1, cores - 1) : cores
}

/**
 * `hardware.json` as a previous run wrote it; undefined when
 * there is none or it is unreadable (then it is measured afresh).
 */
async function readCache(path: string): Promise<CachedProfile | undefined> {
  try {
    const cached = JSON.parse(await readFile(path, 'utf8')) as { measuredAt: number; profile: unknown }
    const profile = HardwareProfile.safeParse(cached.profile)
    return profile.success ? { measuredAt: cached.measuredAt, profile: profile.data } : undefined
  } catch {
    return undefined
  }
}

/** Sequential read of a fresh 64 MiB file; the page cache may flatter it, so it is an upper bound. */
async function diskReadSpeed(dir: string): Promise<number> {
  const path = join(dir, `.read-probe-${process.pid}`)
  await writeFile(path, Buffer.alloc(PROBE_BYTES, 1))
  const fh = await open(path, 'r')
  try {
    const buf = Buffer.allocUnsafe(4 * 1024 * 1024)
    const started = performance.now()
    for (let at = 0; at < PROBE_BYTES; at += buf.length) await fh.read(buf, 0, buf.length, at)
    return PROBE_BYTES / ((performance.now() - started) / 1000)
  } finally {
    await fh.close()
    await rm(path, { force: true })
  }
}

/** Bytes per second of large memory copies (best of three). */
function memoryBandwidth(): number {
  const a = Buffer.alloc(PROBE_BYTES, 1)
  const b = Buffer.allocUnsafe(PROBE_BYTES)
  let best = Number.POSITIVE_INFINITY
  for (let i = 0; i < 3; i++) {
    const started = performance.now()
    a.copy(b)
    best = Math.min(best, performance.now() - started)
  }
  // A copy reads and writes every byte.
  return (2 * PROBE_BYTES) / (best / 1000)
}
