import { type ChildProcess, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { REPO_ROOT } from './models'

export interface NeuronProcess {
  readonly child: ChildProcess
  /** Everything it printed so far, stdout and stderr. */
  output(): string
  /** Resolves with the first match of `pattern` in its output; rejects if it exits first. */
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>
  /** SIGTERM, then SIGKILL after `graceMs`; resolves when it has exited. */
  stop(graceMs?: number): Promise<void>
}

/**
 * Runs `neuron …` as a real process, as a person would. `wrapper`: a command it runs under, e.g.
 * ['ip', 'netns', 'exec', NS] for another computer on a namespace network.
 */
export function startNeuron(
  args: string[],
  env: NodeJS.ProcessEnv = {},
  wrapper: readonly string[] = [],
): NeuronProcess {
  const [command = process.execPath, ...before] = [...wrapper, process.execPath]
  const child = spawn(command, [...before, join(REPO_ROOT, 'bin/neuron.js'), ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  return watchProcess(child, `neuron ${args[0]}`)
}

/** A child process's output, kept and searched as it comes (`name` says which one in errors). */
export function watchProcess(child: ChildProcess, name: string): NeuronProcess {
  let out = ''
  const listeners = new Set<() => void>()
  const append = (chunk: Buffer) => {
    out += chunk.toString()
    for (const l of listeners) l()
  }
  child.stdout?.on('data', append)
  child.stderr?.on('data', append)
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  return {
    child,
    output: () => out,
    waitFor(pattern, timeoutMs = 60_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const m = out.match(pattern)
          if (m) {
            cleanup()
            resolve(m)
          }
        }
        const timer = setTimeout(() => {
          cleanup()
          reject(new Error(`${name} printed no ${pattern} within ${timeoutMs} ms:\n${out}`))
        }, timeoutMs)
        const onExit = () => {
          check()
          cleanup()
          reject(
            new Error(`${name} exited (${child.exitCode ?? child.signalCode}) before printing ${pattern}:\n${out}`),
          )
        }
        const cleanup = () => {
          clearTimeout(timer)
          listeners.delete(check)
          child.off('exit', onExit)
        }
        listeners.add(check)
        child.once('exit', onExit)
        check()
      })
    },
    async stop(graceMs = 5000) {
      if (child.exitCode !== null || child.signalCode !== null) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
      await exited
      clearTimeout(timer)
    },
  }
}

/**
 * A process's resident memory once it has settled after a burst of work, MiB: the least seen over up to `settleMs`, as
 * soon as it is within `bound` of `before`. V8's memory reducer gives back the heap a burst grew once the process idles
 * (test/fuzz.test.ts, seed 1639436350: the tracker held 317 MiB for 7 s after its barrage, then 180, under its 197
 * before); a leak stays.
 */
export async function settledRss(p: NeuronProcess, before: number, bound: number, settleMs = 20_000): Promise<number> {
  let least = rssMiB(p)
  for (const until = Date.now() + settleMs; least - before >= bound && Date.now() < until; ) {
    await new Promise((resolve) => setTimeout(resolve, 500))
    least = Math.min(least, rssMiB(p))
  }
  return least
}

/** Resident memory of a child process, MiB (Linux /proc). */
export function rssMiB(p: NeuronProcess): number {
  const status = readFileSync(`/proc/${p.child.pid}/status`, 'utf8')
  const kib = Number(/VmRSS:\s+(\d+) kB/.exec(status)?.[1])
  return Math.round(kib / 1024)
}

/**
 * A swarm of real `neuron` processes on loopback in `dir`: a tracker (heartbeats every 500 ms, a grant for new keys)
 * with the model packed in `dir/packed` published to it, and hosts started on demand, each on one thread.
 */
export class ProcessSwarm {
  /** Every process started, in order; stop() ends them all. */
  readonly processes: NeuronProcess[] = []
  trackerUrl = ''

  private constructor(
    readonly dir: string,
    readonly modelId: string,
  ) {}

  /**
   * `trackerArgs`: the tracker's options past its port, database
   * and heartbeat (default: a grant of 10 credits a new key).
   */
  static async start(
    dir: string,
    modelId: string,
    trackerArgs = ['--new-key-grant-micro', '10000000'],
  ): Promise<ProcessSwarm> {
    const swarm = new ProcessSwarm(dir, modelId)
    const tracker = swarm.start([
      'tracker',
      '--port',
      '0',
      '--db',
      join(dir, 'tracker.sqlite'),
      '--heartbeat-ms',
      '500',
      ...trackerArgs,
    ])
    swarm.trackerUrl = (await tracker.waitFor(/tracker listening on (http:\/\/127\.0\.0\.1:\d+)/))[1] as string
    await swarm
      .start(['publish', join(dir, 'packed'), '--tracker', swarm.trackerUrl, '--data-dir', join(dir, 'publisher')])
      .waitFor(/published \S+ \(infohash /)
    return swarm
  }

  start(args: string[]): NeuronProcess {
    const p = startNeuron(args)
    this.processes.push(p)
    return p
  }

  /** A host of blocks `layers` ("A:B") with its data in `dir/name`, once it is ready. */
  async startHost(name: string, layers: string): Promise<NeuronProcess> {
    const args = [
      'host',
      '--tracker',
      this.trackerUrl,
      '--model',
      this.modelId,
      '--blocks',
      layers,
      '--data-dir',
      join(this.dir, name),
      '--threads',
      '1',
    ]
    const host = this.start(args)
    await host.waitFor(/ ready blocks \[\d+, \d+\) ws:/, 90_000)
    return host
  }

  async stop(): Promise<void> {
    await Promise.all(this.processes.map((p) => p.stop()))
  }
}
