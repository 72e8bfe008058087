// CPU accounting shared by the torrent benches: this process's CPU-seconds, all threads and the main thread's alone.
import { readdirSync, readFileSync } from 'node:fs'

/** Clock ticks per second of /proc's utime and stime (USER_HZ): 100 on every Linux Node supports. */
const USER_HZ = 100

/** CPU-seconds (user + system) spent so far by every thread of this process, by its main thread alone, and the main thread's in the kernel. */
export function cpuNow(): { all: number; main: number; mainSystem: number } {
  const { user, system } = process.cpuUsage()
  // Fields 14 and 15 (utime, stime) of the main thread's stat; the command name before ')' may hold spaces.
  const fields = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? []
  return { all: (user + system) / 1e6, main: (Number(fields[11]) + Number(fields[12])) / USER_HZ, mainSystem: Number(fields[12]) / USER_HZ }
}

export async function timed(fn: () => Promise<unknown> | unknown): Promise<number> {
  const started = performance.now()
  await fn()
  return (performance.now() - started) / 1000
}

/** Runs `fn`, returning its wall seconds and this process's CPU-seconds (all threads, main thread). */
export async function measured(fn: () => Promise<unknown>): Promise<{ seconds: number; cpu_s: number; main_thread_cpu_s: number; main_thread_system_cpu_s: number }> {
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

/** CPU-seconds spent so far by this process's threads, summed by thread name (`node` is the main thread, `V8 DefaultWorke` V8's GC helpers, `libuv-worker` the fs pool). */
export function cpuByThreadName(): Record<string, number> {
  const byName: Record<string, number> = {}
  for (const task of readdirSync('/proc/self/task')) {
    const stat = readFileSync(`/proc/self/task/${task}/stat`, 'utf8')
    const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' ')
    byName[name] = (byName[name] ?? 0) + (Number(fields[11]) + Number(fields[12])) / USER_HZ
  }
  return byName
}

/** What each thread name spent between two cpuByThreadName() readings (threads that ended in between are missing). */
export function cpuByThreadSince(before: Record<string, number>): Record<string, number> {
  const after = cpuByThreadName()
  return Object.fromEntries(Object.entries(after).map(([name, s]) => [name, Math.round((s - (before[name] ?? 0)) * 100) / 100]))
}
