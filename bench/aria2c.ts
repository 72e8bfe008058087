// Debian's aria2c as the outside BitTorrent reference for bench:torrent: a client that shares no code
// with webtorrent, downloading from our seeders and seeding to ours. Loopback only, no DHT, no local
// peer discovery, no peer exchange (as host/artifacts/aria2c.test.ts drives it).
import { type ChildProcess, execFile, spawn, spawnSync } from 'node:child_process'

export const HAVE_ARIA2C = spawnSync('aria2c', ['--version']).status === 0

const LOOPBACK_ONLY = [
  '--interface=127.0.0.1',
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

/** Downloads every file of `torrentFile` into `dir`; resolves once aria2c has them all, piece-verified (SHA-1), and has exited. */
export function aria2cDownload(torrentFile: string, dir: string, timeoutMs = 300_000): Promise<void> {
  const args = [torrentFile, `--dir=${dir}`, ...LOOPBACK_ONLY, '--seed-time=0', '--bt-stop-timeout=60']
  return new Promise((resolve, reject) => {
    execFile('aria2c', args, { timeout: timeoutMs }, (error, stdout, stderr) =>
      error ? reject(new Error(`aria2c download failed (${error.message}):\n${stdout}\n${stderr}`)) : resolve(),
    )
  })
}

/**
 * Seeds the files under `dir` (laid out as the torrent names them) on `port` until killed. It hashes
 * them once first (--check-integrity), so it never serves a byte it has not checked.
 */
export function aria2cSeed(torrentFile: string, dir: string, port: number): ChildProcess {
  return spawn(
    'aria2c',
    [torrentFile, `--dir=${dir}`, ...LOOPBACK_ONLY, `--listen-port=${port}`, '--check-integrity=true', '--seed-ratio=0.0', '--bt-max-peers=0'],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  )
}
