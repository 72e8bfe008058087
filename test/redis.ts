// A throwaway Redis server for tests: redis-server on a free loopback port, no persistence, its
// working directory a temporary one, stopped and deleted at the end.
import { type ChildProcess, execFile, spawn } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { freePort } from './postgres'

const run = promisify(execFile)

/** Why Redis tests cannot run here (undefined: they can). Shown in the skipped test's name. */
export async function redisMissing(): Promise<string | undefined> {
  try {
    await run('redis-server', ['--version'])
    return undefined
  } catch {
    return 'redis-server is not installed (apt-get install redis-server)'
  }
}

export interface RedisServer {
  /** redis://127.0.0.1:<port> */
  readonly url: string
  stop(): Promise<void>
}

/** Starts a server (well under a second), on `port` if given (a restart of one stopped). Call redisMissing() first. */
export async function startRedis(port?: number): Promise<RedisServer> {
  const dir = await mkdtemp(join(tmpdir(), 'neuron-redis-'))
  port ??= await freePort()
  const child: ChildProcess = spawn(
    'redis-server',
    [
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'no',
      '--dir',
      dir,
      '--protected-mode',
      'yes',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
  let output = ''
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`redis-server did not start within 10 s: ${output}`)), 10_000)
    child.stdout?.on('data', (d: Buffer) => {
      output += d.toString()
      if (output.includes('Ready to accept connections')) {
        clearTimeout(timer)
        resolve()
      }
    })
    child.once('exit', (code) => {
      clearTimeout(timer)
      reject(new Error(`redis-server exited with ${code}: ${output}`))
    })
  })
  child.stdout?.resume()
  child.stderr?.resume()
  return {
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      if (child.exitCode === null) {
        const exited = new Promise((r) => child.once('exit', r))
        child.kill('SIGKILL')
        await exited
      }
      await rm(dir, { recursive: true, force: true })
    },
  }
}
