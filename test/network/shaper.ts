// The userspace link between a router's WAN and the internet bridge (see shaper.py): delay and rate, both ways.
import { type ChildProcess, spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const SCRIPT = fileURLToPath(new URL('./shaper.py', import.meta.url))

export interface LinkShape {
  /** One-way delay in milliseconds, added each way (a round trip gains twice this). 0: none. */
  delayMs?: number
  /** Line rate in megabits per second, each way. 0 or absent: as fast as the shaper copies. */
  rateMbit?: number
}

export interface Shaper {
  readonly child: ChildProcess
  set(shape: LinkShape): Promise<void>
  stop(): void
}

function line(shape: LinkShape): string {
  const delay = shape.delayMs ?? 0
  const rate = shape.rateMbit ?? 0
  if (!(delay >= 0 && rate >= 0))
    throw new Error(`link shape needs delayMs >= 0 and rateMbit >= 0, got ${JSON.stringify(shape)}`)
  return `${delay} ${rate}`
}

/** Starts a shaper that creates TAP `ifA` in namespace `nsA` and TAP `ifB` in `nsB`; resolves once both exist. */
export function startShaper(nsA: string, ifA: string, nsB: string, ifB: string, shape: LinkShape): Promise<Shaper> {
  const child = spawn('/usr/bin/python3', [SCRIPT, nsA, ifA, nsB, ifB, ...line(shape).split(' ')], {
    stdio: ['pipe', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  const waiting: Array<() => void> = []
  child.stderr.on('data', (chunk: Buffer) => {
    stderr += chunk.toString()
  })
  child.stdout.on('data', (chunk: Buffer) => {
    stdout += chunk.toString()
    for (;;) {
      const end = stdout.indexOf('\n')
      if (end < 0) break
      stdout = stdout.slice(end + 1)
      waiting.shift()?.()
    }
  })
  const answer = () =>
    new Promise<void>((resolve, reject) => {
      const onExit = () => reject(new Error(`link shaper ${nsA}/${ifA} <-> ${nsB}/${ifB} exited: ${stderr.trim()}`))
      child.once('exit', onExit)
      waiting.push(() => {
        child.off('exit', onExit)
        resolve()
      })
    })
  const shaper: Shaper = {
    child,
    async set(next) {
      const answered = answer()
      child.stdin.write(`${line(next)}\n`)
      await answered
    },
    stop() {
      child.stdin.end()
      child.kill('SIGKILL')
    },
  }
  return answer().then(() => shaper)
}
