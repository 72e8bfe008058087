// Waiting on what a child process prints, for daemons that say when they are ready.
import type { ChildProcess } from 'node:child_process'

/** Resolves when `child` has printed `pattern` (stdout or stderr); rejects if it exits or `timeoutMs` passes first. */
export function waitForOutput(child: ChildProcess, pattern: RegExp, what: string, timeoutMs = 15_000): Promise<string> {
  let seen = ''
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      seen += chunk.toString()
      if (pattern.test(seen)) finish(() => resolve(seen))
    }
    const onExit = (code: number | null) =>
      finish(() => reject(new Error(`${what} exited (${code}) before printing ${pattern}:\n${seen}`)))
    const timer = setTimeout(
      () => finish(() => reject(new Error(`${what} printed no ${pattern} within ${timeoutMs} ms:\n${seen}`))),
      timeoutMs,
    )
    const finish = (settle: () => void) => {
      clearTimeout(timer)
      child.stdout?.off('data', onData)
      child.stderr?.off('data', onData)
      child.off('exit', onExit)
      settle()
    }
    child.stdout?.on('data', onData)
    child.stderr?.on('data', onData)
    child.once('exit', onExit)
  })
}
