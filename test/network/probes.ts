// Small Node programs run inside the namespaces to probe the network: servers, clients, a NAT-PMP request.
import type { ChildProcess } from 'node:child_process'
import { waitForOutput } from './children'
import type { HomeNetwork, Place } from './index'

/** What a probe server does with each connection. */
export type ServerKind =
  /** Writes `<remote address> <remote port>` and closes: how the far side sees the caller. */
  | 'who-am-i'
  /** Writes `hello from <name>` and closes. */
  | 'hello'
  /** Writes `tick` every 50 ms until the connection closes. */
  | 'ticker'

const SERVERS: Record<ServerKind, string> = {
  'who-am-i': 's.end(s.remoteAddress + " " + s.remotePort + "\\n")',
  hello: 's.end("hello from " + name + "\\n")',
  ticker:
    'const t = setInterval(() => s.write("tick\\n"), 50); ' +
    's.on("close", () => clearInterval(t)); s.on("error", () => {})',
}

/** Starts a TCP server in `place` on `port` (all addresses); resolves once it listens. */
export async function startServer(
  net: HomeNetwork,
  place: Place,
  kind: ServerKind,
  port: number,
): Promise<ChildProcess> {
  const source = `const name = ${JSON.stringify(place)}
require('node:net')
  .createServer((s) => { ${SERVERS[kind]} })
  .listen(${port}, '0.0.0.0', () => console.log('listening'))`
  const child = net.spawnIn(place, process.execPath, ['-e', source], { stdio: ['ignore', 'pipe', 'pipe'] })
  await waitForOutput(child, /listening/, `a ${kind} server in ${place}`)
  return child
}

export interface Connection {
  /** The first line the server sent, or `failed <code>`. */
  reply: string
  /** Milliseconds from connect() to the connection being established (one round trip). */
  connectMs: number
}

/** Connects from `place` to `host:port` (optionally from `localPort`); gives up after `timeoutMs`. */
export async function connectFrom(
  net: HomeNetwork,
  place: Place,
  host: string,
  port: number,
  options: { localPort?: number; timeoutMs?: number } = {},
): Promise<Connection> {
  const source = `const [host, port, localPort, timeoutMs] = process.argv.slice(1)
const start = performance.now(); let connectMs = -1
const bind = localPort === '0' ? {} : { localPort: Number(localPort) }
const s = require('node:net').connect({ host, port: Number(port), ...bind })
const done = (reply) => { console.log(JSON.stringify({ reply, connectMs })); process.exit(0) }
setTimeout(() => done('failed timeout'), Number(timeoutMs))
s.on('connect', () => { connectMs = performance.now() - start })
s.on('data', (d) => done(String(d).split('\\n')[0]))
s.on('error', (e) => done('failed ' + e.code))`
  const args = [host, String(port), String(options.localPort ?? 0), String(options.timeoutMs ?? 3000)]
  return JSON.parse(await net.exec(place, [process.execPath, '-e', source, ...args])) as Connection
}

/** Asks the home's router for a TCP mapping by NAT-PMP (RFC 6886); resolves the external port it granted. */
export async function mapPortByNatPmp(
  net: HomeNetwork,
  place: Place,
  gateway: string,
  internalPort: number,
  externalPort: number,
): Promise<number> {
  const source = `const [gateway, internal, external] = process.argv.slice(1).map((v, i) => i === 0 ? v : Number(v))
const socket = require('node:dgram').createSocket('udp4')
const request = Buffer.alloc(12)
request[1] = 2 // opcode 2: map TCP
request.writeUInt16BE(internal, 4); request.writeUInt16BE(external, 6); request.writeUInt32BE(3600, 8)
socket.on('message', (m) => {
  console.log(JSON.stringify({ result: m.readUInt16BE(2), external: m.readUInt16BE(10) }))
  process.exit(0)
})
setTimeout(() => { console.log(JSON.stringify({ result: -1, external: 0 })); process.exit(0) }, 3000)
socket.send(request, 5351, gateway)`
  const out = await net.exec(place, [
    process.execPath,
    '-e',
    source,
    gateway,
    String(internalPort),
    String(externalPort),
  ])
  const answer = JSON.parse(out) as { result: number; external: number }
  if (answer.result !== 0)
    throw new Error(
      `NAT-PMP mapping of ${place}:${internalPort} refused by ${gateway} (result ${answer.result}; -1: no answer)`,
    )
  return answer.external
}
