import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { z } from 'zod'
import {
  describeIssues,
  MAX_PAIRING_BODY_BYTES,
  NeuronError,
  PairAsk,
  PairConfirm,
  PairHello,
  PairNonce,
  toWireError,
} from '../../../protocol'
import type { AskedPairings } from './asked-pairings'
import { RateLimit } from './rate-limit'

/** Requests one address may send per minute: a pairing takes about 65 (one status a second). */
const REQUESTS_PER_MINUTE = 120

/** One pairing message's handler: its parsed body, and the address it came from. */
type Route = { schema: z.ZodType; run: (request: never, from: string) => unknown }

/**
 * The asked app's pairing endpoint, next to its tracker: POST /pair/{hello,nonce,confirm,status,refuse}
 * with a JSON body. Every body is bounded and parsed; anything wrong comes back as a typed error
 * ({ ok: false, error }) and the endpoint keeps serving.
 */
export class PairingServer {
  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(pairings: AskedPairings, host: string, log: (line: string) => void): Promise<PairingServer> {
    const routes: Record<string, Route> = {
      '/pair/hello': {
        schema: PairHello,
        run: (r: z.infer<typeof PairHello>, from: string) => pairings.hello(r, from),
      },
      '/pair/nonce': { schema: PairNonce, run: (r: z.infer<typeof PairNonce>) => pairings.nonce(r) },
      '/pair/confirm': { schema: PairConfirm, run: (r: z.infer<typeof PairConfirm>) => pairings.confirmed(r) },
      '/pair/status': { schema: PairAsk, run: (r: z.infer<typeof PairAsk>) => pairings.status(r) },
      '/pair/refuse': { schema: PairAsk, run: (r: z.infer<typeof PairAsk>) => pairings.refuse(r, 'there') },
    }
    const limit = new RateLimit(REQUESTS_PER_MINUTE, 60_000)
    const server = createServer((req, res) => {
      void answer(req, res, routes, limit).catch((e: Error) => log(`pairing endpoint: ${e.message}`))
    })
    server.headersTimeout = 5_000
    server.requestTimeout = 5_000
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      server.listen(0, host, () => resolve())
    })
    return new PairingServer(server, (server.address() as AddressInfo).port)
  }

  close(): Promise<void> {
    this.server.closeAllConnections()
    return new Promise((resolve) => this.server.close(() => resolve()))
  }
}

async function answer(
  req: IncomingMessage,
  res: ServerResponse,
  routes: Record<string, Route>,
  limit: RateLimit,
): Promise<void> {
  const reply = (status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify(body))
  }
  const fail = (status: number, code: string, message: string) => reply(status, { ok: false, error: { code, message } })
  const from = unmapped(req.socket.remoteAddress ?? '')
  if (!limit.take(from))
    return fail(
      429,
      'rate_limited',
      `more than ${REQUESTS_PER_MINUTE} pairing requests a minute from this address; wait a minute`,
    )
  const route = Object.hasOwn(routes, req.url ?? '') ? routes[req.url as string] : undefined
  if (req.method !== 'POST' || route === undefined)
    return fail(
      404,
      'not_found',
      `no ${req.method} ${req.url} here; the pairing endpoint takes POST /pair/{hello,nonce,confirm,status,refuse}`,
    )
  const body = await readBody(req)
  if (body === null) return fail(413, 'too_large', `a pairing message is at most ${MAX_PAIRING_BODY_BYTES} bytes`)
  let json: unknown
  try {
    json = JSON.parse(body)
  } catch {
    return fail(400, 'bad_request', `${req.url}: the body is not JSON`)
  }
  const parsed = route.schema.safeParse(json)
  if (!parsed.success) return fail(400, 'bad_request', describeIssues(req.url ?? '', parsed.error))
  try {
    reply(200, { ok: true, value: await route.run(parsed.data as never, from) })
  } catch (error) {
    const wire = toWireError(error)
    reply(error instanceof NeuronError ? (wire.code === 'pairing_unknown' ? 404 : 409) : 500, {
      ok: false,
      error: wire,
    })
  }
}

/** An IPv4 peer as it advertises itself: without the `::ffff:` a dual-stack socket puts before it. */
export function unmapped(address: string): string {
  return address.startsWith('::ffff:') ? address.slice('::ffff:'.length) : address
}

/** The body as text, or null once it passes MAX_PAIRING_BODY_BYTES (the rest is not read). */
function readBody(req: IncomingMessage): Promise<string | null> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = 0
    req.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (size > MAX_PAIRING_BODY_BYTES) {
        req.removeAllListeners('data')
        req.resume()
        resolve(null)
        return
      }
      chunks.push(chunk)
    })
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')))
    req.on('error', reject)
  })
}
