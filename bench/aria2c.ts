// Debian's aria2c as the outside BitTorrent reference for bench:torrent: a client that shares no code
// with webtorrent, downloading from our seeders and seeding to ours. Loopback only, no DHT, no local
// peer discovery, no peer exchange (as host/artifacts/aria2c.test.ts drives it).
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process'
import { mkdir, readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'

/** aria2c, and GNU time to account for its CPU. */
export const HAVE_ARIA2C =
  spawnSync('aria2c', ['--version']).status === 0 && spawnSync('/usr/bin/time', ['true']).status === 0

const NO_DISCOVERY = [
  '--enable-dht=false',
  '--enable-dht6=false',
  '--bt-enable-lpd=false',
  '--enable-peer-exchange=false',
  '--disable-ipv6=true',
  '--async-dns=false',
  '--no-conf=true',
  '--summary-interval=0',
  '--console-log-level=warn',
  '--file-allocation=none',
  '--bt-save-metadata=false',
]
const LOOPBACK_ONLY = ['--interface=127.0.0.1', ...NO_DISCOVERY]

export interface Aria2cPlace {
  /** Prepended to the command line, e.g. `ip netns exec <namespace>` to run it on a namespace network. */
  readonly prefix?: readonly string[]
  /** Use every interface of that place, not only loopback. */
  readonly anyInterface?: boolean
}

/**
 * Downloads every file of `torrentFile` into `dir`; resolves once aria2c has them all, piece-verified
 * (SHA-1), and has exited, with the CPU-seconds (user + system) aria2c spent: GNU time's, written to a
 * file of its own so aria2c's output cannot be taken for it.
 */
export async function aria2cDownload(
  torrentFile: string,
  dir: string,
  timeoutMs = 300_000,
  place: Aria2cPlace = {},
): Promise<{ cpuSeconds: number }> {
  const args = [
    torrentFile,
    `--dir=${dir}`,
    ...(place.anyInterface ? NO_DISCOVERY : LOOPBACK_ONLY),
    '--seed-time=0',
    '--bt-stop-timeout=60',
  ]
  await mkdir(dir, { recursive: true })
  const timeFile = join(dir, '.aria2c-time')
  await new Promise<void>((resolve, reject) => {
    const [command = '/usr/bin/time', ...rest] = [
      ...(place.prefix ?? []),
      '/usr/bin/time',
      '-f',
      '%U %S',
      '-o',
      timeFile,
      'aria2c',
      ...args,
    ]
    execFile(command, rest, { timeout: timeoutMs }, (error, stdout, stderr) =>
      error ? reject(new Error(`aria2c download failed (${error.message}):\n${stdout}\n${stderr}`)) : resolve(),
    )
  })
  const [user, system] = (await readFile(timeFile, 'utf8')).trim().split(/\s+/).map(Number)
  await rm(timeFile, { force: true })
  return { cpuSeconds: (user ?? Number.NaN) + (system ?? Number.NaN) }
}

/**
 * Seeds the files under `dir` (laid out as the torrent names them) on `port` until killed. It hashes
 * them once first (--check-integrity), so it never serves a byte it has not checked.
 */
export function aria2cSeed(torrentFile: string, dir: string, port: number): ChildProcess {
  return spawn(
    'aria2c',
    [
      torrentFile,
      `--dir=${dir}`,
      ...LOOPBACK_ONLY,
      `--listen-port=${port}`,
      '--check-integrity=true',
      '--seed-ratio=0.0',
      '--bt-max-peers=0',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
}
