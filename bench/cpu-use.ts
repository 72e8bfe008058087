// CPU accounting shared by the torrent benches: this process's CPU-seconds, all threads and the main thread's alone.
import { readFileSync } from 'node:fs'

/** Clock ticks per second of /proc's utime and stime (USER_HZ): 100 on every Linux Node supports. */
const USER_HZ = 100

/**
 * CPU-seconds (user + system) spent so far by every thread of this
 * process, by its main thread alone, and the main thread's in the kernel.
 */
export function cpuNow(): { all: number; main: number; mainSystem: number } {
  const { user, system } = process.cpuUsage()
  // Fields 14 and 15 (utime, stime) of the main thread's stat; the command name before ')' may hold spaces.
  const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return {
    all: (user + system) / 1e6,
    main: (Number(fields[11]) + Number(fields[12])) / USER_HZ,
    mainSystem: Number(fields[12]) / USER_HZ,
  }
}

export async function timed(fn: () => Promise<unknown> | unknown): Promise<number> {
  const started = performance.now()
  await fn()
  return (performance.now() - started) / 1000
}

/** Runs `fn`, returning its wall seconds and this process's CPU-seconds (all threads, main thread). */
export async function measured(
  fn: () => Promise<unknown>,
): Promise<{ seconds: number; cpu_s: number; main_thread_cpu_s: number; main_thread_system_cpu_s: number }> {
  const before = cpuNow()
  const seconds = await timed(fn)
  const after = cpuNow()
  return {
    seconds,
    cpu_s: after.all - before.all,
    main_thread_cpu_s: after.main - before.main,
    main_thread_system_cpu_s: after.mainSystem - before.mainSystem,
  }
}

export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)] ?? Number.NaN
}
