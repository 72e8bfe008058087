import { type ChildProcess, spawn } from 'node:child_process'
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

/** Runs `neuron …` as a real process, as a person would. */
export function startNeuron(args: string[], env: NodeJS.ProcessEnv = {}): NeuronProcess {
  const child = spawn(process.execPath, [join(REPO_ROOT, 'bin/neuron.js'), ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
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
          reject(new Error(`neuron ${args[0]} printed no ${pattern} within ${timeoutMs} ms:\n${out}`))
        }, timeoutMs)
        const onExit = () => {
          check()
          cleanup()
          reject(new Error(`neuron ${args[0]} exited (${child.exitCode ?? child.signalCode}) before printing ${pattern}:\n${out}`))
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
