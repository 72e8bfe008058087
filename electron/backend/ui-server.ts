import { randomBytes, timingSafeEqual } from 'node:crypto'
import { createReadStream } from 'node:fs'
import { stat } from 'node:fs/promises'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { extname, join, resolve, sep } from 'node:path'
import type { Duplex } from 'node:stream'
import { type WebSocket, WebSocketServer } from 'ws'
import {
  type Ack,
  AppCallFrame,
  type AppEventFrame,
  type AppReplyFrame,
  describeIssues,
  NeuronError,
} from '../../protocol'
import type { AppEventListener } from './events'
import { keyFromPasted, keyPage } from './key-page'

/** The part of AppBackend the browser mode needs. */
export interface AppCalls {
  call(method: string, input: unknown): Promise<Ack<unknown>>
  onEvent(listener: AppEventListener): () => void
}

export interface AppUiOptions {
  /** 0 (default) picks a free port. */
  readonly port?: number
  /** Default 127.0.0.1: a volunteer's host is not driven from the network. */
  readonly host?: string
  /** The built renderer (dist/renderer), with index.html. */
  readonly staticDir: string
  /**
   * The key the page and its socket need; default a new one for this run (browser mode: the saved one, see loadUiKey).
   */
  readonly key?: string
  /** Origins besides this server's own that may open the API socket (e.g. a dev server). */
  readonly allowedOrigins?: readonly string[]
  /** Where the key is kept (the data dir's ui-key), told on the page that asks for it. */
  readonly keyFile?: string
}

export interface AppUiServer {
  /** The server's origin, e.g. http://127.0.0.1:7071. */
  readonly url: string
  /** What a person opens: the origin with the key, which the page swaps for a cookie. */
  readonly openUrl: string
  /** The key: the API socket admits only browsers that were given it. */
  readonly key: string
  close(): Promise<void>
}

export const API_PATH = '/api'
/** One call's JSON is small; a bigger frame is a mistake or an attack. */
const MAX_FRAME_BYTES = 4 * 1024 * 1024

const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.webp': 'image/webp',
  '.ico': 'image/x-icon',
  '.woff': 'font/woff',
  '.woff2': 'font/woff2',
  '.ttf': 'font/ttf',
  '.wasm': 'application/wasm',
  '.txt': 'text/plain; charset=utf-8',
}

/**
 * The browser mode: serves the built renderer and, at /api, a WebSocket speaking the app contract's
 * frames (protocol/app.ts) to the backend. It listens on loopback unless told otherwise, and the socket
 * admits only pages served by this server (its own origin) in a browser holding the key: the printed
 * link (or the key pasted on the page that asks for it) carries it once, and it lives on as an HttpOnly cookie. Without
 * the key, any local process could drive the host (export its identity, change its settings).
 */
export async function serveAppUi(backend: AppCalls, options: AppUiOptions): Promise<AppUiServer> {
  const root = resolve(options.staticDir)
  const index = await builtIndex(root)
  const host = options.host ?? '127.0.0.1'
  const key = options.key ?? randomBytes(24).toString('base64url')
  let cookieName = ''
  const http = createServer((req, res) => {
    void serveStatic(root, index, req, res, { key, cookieName, keyFile: options.keyFile }).catch(() => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' })
      res.end('internal error')
    })
  })
  const sockets = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES })
  await new Promise<void>((ok, fail) => {
    http.once('error', fail)
    http.listen(options.port ?? 0, host, () => ok())
  })
  const port = (http.address() as AddressInfo).port
  // Cookies are not kept apart by port: the name carries it, so two apps on one machine don't collide.
  cookieName = `neuron-key-${port}`
  const shownHost = host.includes(':') ? `[${host}]` : host
  const url = `http://${shownHost}:${port}`
  const origins = new Set([
    url,
    ...(host === '127.0.0.1' || host === '::1' ? [`http://localhost:${port}`] : []),
    ...(options.allowedOrigins ?? []),
  ])

  http.on('upgrade', (req: IncomingMessage, socket: Duplex, head: Buffer) => {
    const path = (req.url ?? '/').split('?')[0]
    const refuse = (status: string, why: string) => {
      socket.end(`HTTP/1.1 ${status}\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n\r\n${why}\n`)
    }
    if (path !== API_PATH) return refuse('404 Not Found', `the app's API socket is at ${API_PATH}`)
    // Browsers always send Origin: a page from anywhere else must not drive this host. (Non-browser clients send none.)
    const origin = req.headers.origin
    if (origin !== undefined && !origins.has(origin))
      return refuse('403 Forbidden', `origin ${origin} may not use this app's API; open ${url} instead`)
    if (!sameKey(cookieOf(req, cookieName), key)) {
      return refuse(
        '401 Unauthorized',
        `this app's API needs the key from the link neuron printed (${url}/?key=…); open that link`,
      )
    }
    sockets.handleUpgrade(req, socket, head, (ws) => sockets.emit('connection', ws, req))
  })

  sockets.on('connection', (ws: WebSocket) => {
    ws.on('message', (data, isBinary) => void answer(ws, data.toString(), isBinary))
    ws.on('error', () => ws.terminate())
  })

  async function answer(ws: WebSocket, text: string, isBinary: boolean): Promise<void> {
    let raw: unknown
    try {
      if (isBinary) throw new Error('binary frame')
      raw = JSON.parse(text)
    } catch {
      // Without JSON there is no call id to answer: say why in the close frame (at most 123 bytes).
      ws.close(1007, 'bad_request: send text frames holding one JSON AppCallFrame')
      return
    }
    const frame = AppCallFrame.safeParse(raw)
    if (!frame.success) {
      const id =
        typeof raw === 'object' &&
        raw !== null &&
        'id' in raw &&
        Number.isSafeInteger(raw.id) &&
        (raw.id as number) >= 0
          ? (raw.id as number)
          : null
      if (id === null) {
        ws.close(1008, 'bad_request: a frame is {kind:"call", id, method, input}')
        return
      }
      send(ws, {
        kind: 'reply',
        id,
        ok: false,
        error: { code: 'bad_request', message: describeIssues('call frame', frame.error) },
      })
      return
    }
    const ack = await backend.call(frame.data.method, frame.data.input)
    send(
      ws,
      ack.ok
        ? { kind: 'reply', id: frame.data.id, ok: true, value: ack.value }
        : { kind: 'reply', id: frame.data.id, ok: false, error: ack.error },
    )
  }

  const unsubscribe = backend.onEvent((event, data) => {
    const frame: AppEventFrame = { kind: 'event', event, data }
    const text = JSON.stringify(frame)
    for (const ws of sockets.clients) if (ws.readyState === ws.OPEN) ws.send(text)
  })

  return {
    url,
    openUrl: `${url}/?key=${key}`,
    key,
    async close() {
      unsubscribe()
      for (const ws of sockets.clients) ws.terminate()
      await new Promise<void>((r) => sockets.close(() => r()))
      http.closeAllConnections()
      await new Promise<void>((r) => http.close(() => r()))
    },
  }
}

/** `<staticDir>/index.html`, or ui_not_built when the renderer has not been built there. */
export async function builtIndex(staticDir: string): Promise<string> {
  const index = join(resolve(staticDir), 'index.html')
  if ((await stat(index).catch(() => undefined))?.isFile() !== true) {
    throw new NeuronError('ui_not_built', 'the UI is not built: run npm run build', { staticDir })
  }
  return index
}

function send(ws: WebSocket, frame: AppReplyFrame): void {
  if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(frame))
}

function cookieOf(req: IncomingMessage, name: string): string | undefined {
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const at = part.indexOf('=')
    if (at > 0 && part.slice(0, at).trim() === name) return part.slice(at + 1).trim()
  }
  return undefined
}

function sameKey(given: string | undefined, key: string): boolean {
  if (given === undefined) return false
  const a = Buffer.from(given)
  const b = Buffer.from(key)
  return a.length === b.length && timingSafeEqual(a, b)
}

/**
 * A file under `root`, or index.html for app routes (paths without an extension); nothing outside
 * `root`. The page itself needs the run's key: from `?key=` (then kept as a cookie, and dropped from
 * the address bar by a redirect) or from that cookie. Assets are the public build and need none.
 */
async function serveStatic(
  root: string,
  index: string,
  req: IncomingMessage,
  res: ServerResponse,
  auth: { key: string; cookieName: string; keyFile: string | undefined },
): Promise<void> {
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' })
    res.end('only GET and HEAD\n')
    return
  }
  let path: string
  let given: string | null
  try {
    const parsed = new URL(req.url ?? '/', 'http://x')
    path = decodeURIComponent(parsed.pathname)
    given = keyFromPasted(parsed.searchParams.get('key'))
  } catch {
    res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' })
    res.end('bad path\n')
    return
  }
  const file = resolve(root, `.${path}`)
  if (path.includes('\0') || (file !== root && !file.startsWith(root + sep))) {
    res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' })
    res.end('not found\n')
    return
  }
  const info = await stat(file).catch(() => undefined)
  let target = file
  if (info?.isFile() !== true) {
    if (extname(path) !== '') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' })
      res.end('not found\n')
      return
    }
    target = index
  }
  if (target === index) {
    if (given !== null && sameKey(given, auth.key)) {
      res.writeHead(303, {
        location: path,
        // Kept a year: the key outlives restarts (loadUiKey), so a bookmark opens the app without the link.
        'set-cookie': `${auth.cookieName}=${auth.key}; HttpOnly; SameSite=Strict; Path=/; Max-Age=31536000`,
        'cache-control': 'no-store',
      })
      res.end()
      return
    }
    if (!sameKey(cookieOf(req, auth.cookieName), auth.key)) {
      res.writeHead(401, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' })
      const keyFile = auth.keyFile === undefined ? {} : { keyFile: auth.keyFile }
      res.end(keyPage({ refused: given !== null, ...keyFile }))
      return
    }
  }
  const size = target === file && info !== undefined ? info.size : (await stat(target)).size
  res.writeHead(200, {
    'content-type': MIME[extname(target).toLowerCase()] ?? 'application/octet-stream',
    'content-length': size,
    'x-content-type-options': 'nosniff',
    // Hashed assets may be cached; index.html must be fetched again to see a new build.
    'cache-control': target === index ? 'no-cache' : 'public, max-age=3600',
  })
  if (req.method === 'HEAD') {
    res.end()
    return
  }
  createReadStream(target).pipe(res)
}
