// Probes for the IPv6 side of the namespace network: a TCP server on [::], a connect that says what answered, and
// the PCP pinhole client run inside a home computer (ipv6-pinhole-child.ts).
import type { ChildProcess } from 'node:child_process'
import { join } from 'node:path'
import { REPO_ROOT } from '../models'
import { waitForOutput } from './children'
import type { HomeNetwork, Place } from './index'

/** A TCP server on [::]:`port` in `place` that writes `<remote address>` and closes; resolves once it listens. */
export async function startServer6(net: HomeNetwork, place: Place, port: number): Promise<ChildProcess> {
  const source = `require('node:net').createServer((s) => s.end(s.remoteAddress + '\\n'))
  .listen(${port}, '::', () => console.log('listening'))`
  const child = net.spawnIn(place, process.execPath, ['-e', source], { stdio: ['ignore', 'pipe', 'pipe'] })
  await waitForOutput(child, /listening/, `a v6 server in ${place}`)
  return child
}

/** Connects from `place` to [address]:port: the line the server wrote, or `failed <code>` (`failed timeout` at 2 s). */
export async function connect6(net: HomeNetwork, place: Place, address: string, port: number): Promise<string> {
  const source = `const s = require('node:net').connect(${port}, ${JSON.stringify(address)})
s.setEncoding('utf8'); let got = ''
s.on('data', (d) => (got += d)); s.on('end', () => { console.log(got.trim()); process.exit(0) })
s.on('error', (e) => { console.log('failed ' + e.code); process.exit(0) })
setTimeout(() => { console.log('failed timeout'); process.exit(0) }, 2000)`
  return (await net.exec(place, [process.execPath, '-e', source])).trim()
}

/**
 * Runs the host's PCP client in `place`: opens (lifetime > 0) or closes (0) a pinhole for `port` on `address` with
 * the 24-hex-digit `nonce`; resolves the grant as JSON, or `{ error }`.
 */
export async function pinholeFrom(
  net: HomeNetwork,
  place: Place,
  args: { router: string; address: string; port: number; lifetimeS: number; nonce: string },
): Promise<{ externalAddress?: string; externalPort?: number; lifetimeS?: number; error?: string }> {
  const child = join(REPO_ROOT, 'test/network/ipv6-pinhole-child.ts')
  const out = await net.exec(place, [process.execPath, '--import', 'tsx', child, JSON.stringify(args)])
  return JSON.parse(out.trim().split('\n').at(-1) ?? '{}')
}
