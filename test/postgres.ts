// A throwaway PostgreSQL cluster for tests: initdb into a temporary directory, started on a free
// loopback port with its socket in that directory, stopped and deleted at the end. PostgreSQL refuses
// to run as root, so as root (CI) the cluster belongs to the `postgres` user Debian's package creates.
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { chmod, chown, mkdtemp, readdir, rm } from 'node:fs/promises'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'

const run = promisify(execFile)

/**
 * Where initdb and pg_ctl are: on PATH, else the newest
 * /usr/lib/postgresql/<version>/bin (Debian keeps them there, off PATH).
 */
async function findBin(): Promise<string | undefined> {
  for (const dir of (process.env.PATH ?? '').split(':'))
    if (dir !== '' && existsSync(join(dir, 'initdb')) && existsSync(join(dir, 'pg_ctl'))) return dir
  const root = '/usr/lib/postgresql'
  if (!existsSync(root)) return undefined
  const versions = (await readdir(root)).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a))
  for (const v of versions) if (existsSync(join(root, v, 'bin', 'initdb'))) return join(root, v, 'bin')
  return undefined
}

/** Why PostgreSQL tests cannot run here (undefined: they can). Shown in the skipped test's name. */
export async function postgresMissing(): Promise<string | undefined> {
  const bin = await findBin()
  if (bin === undefined) return 'PostgreSQL is not installed (apt-get install postgresql)'
  if (process.getuid?.() === 0) {
    try {
      await run('id', ['-u', 'postgres'])
    } catch {
      return 'running as root and there is no postgres user to run PostgreSQL as'
    }
  }
  return undefined
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer()
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number }
      server.close(() => resolve(port))
    })
  })
}

export interface PostgresCluster {
  /** postgres://… of the cluster's `postgres` database. */
  readonly url: string
  /** A new, empty database on the cluster; its postgres:// URL. */
  createDatabase(): Promise<string>
  stop(): Promise<void>
}

/** Starts a cluster (a few seconds: initdb, then start). Call postgresMissing() first. */
export async function startPostgres(): Promise<PostgresCluster> {
  const bin = await findBin()
  if (bin === undefined)
    throw new Error('PostgreSQL is not installed (apt-get install postgresql); postgresMissing() says so first.')
  const root = process.getuid?.() === 0
  const dir = await mkdtemp(join(tmpdir(), 'neuron-pg-'))
  const data = join(dir, 'data')
  if (root) {
    const ids = await run('id', ['postgres'])
    const uid = Number(/uid=(\d+)/.exec(ids.stdout)?.[1])
    const gid = Number(/gid=(\d+)/.exec(ids.stdout)?.[1])
    await chown(dir, uid, gid)
    await chmod(dir, 0o700)
  }
  const as = (cmd: string, args: string[]) =>
    root ? run('runuser', ['-u', 'postgres', '--', join(bin, cmd), ...args]) : run(join(bin, cmd), args)
  const port = await freePort()
  // The tests' own cluster: trust on loopback, no fsync (a crash loses a throwaway database, nothing else).
  await as('initdb', ['-D', data, '-U', 'neuron', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--locale', 'C'])
  const options =
    `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c ` +
    `full_page_writes=off -c max_connections=60`
  await as('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', '-t', '60', 'start'])
  const url = `postgres://neuron@127.0.0.1:${port}/postgres`
  let n = 0
  return {
    url,
    async createDatabase() {
      const name = `t${process.pid}_${++n}`
      const { default: pg } = await import('pg')
      const client = new pg.Client({ connectionString: url })
      client.on('error', () => {}) // a lost connection fails the query below instead
      await client.connect()
      try {
        await client.query(`create database ${name}`)
      } finally {
        await client.end()
      }
      return `postgres://neuron@127.0.0.1:${port}/${name}`
    },
    async stop() {
      await as('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => {})
      await rm(dir, { recursive: true, force: true })
    },
  }
}
