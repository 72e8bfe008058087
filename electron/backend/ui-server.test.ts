import { mkdir, writeFile } from 'node:fs/promises'
import { type IncomingHttpHeaders, request } from 'node:http'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { AppEventFrame, AppReplyFrame, NeuronError } from '../../protocol'
import { scratchDir } from '../../test/models'
import { AppBackend } from './backend'
import { type AppUiServer, serveAppUi } from './ui-server'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let backend: AppBackend
let ui: AppUiServer

const INDEX = '<!doctype html><title>Neuron</title><div id="root"></div>'

/** A raw GET, so the path reaches the server as written (fetch would normalise `..`). */
function get(
  path: string,
  cookie: string | null = keyCookie(),
): Promise<{ status: number; type: string | undefined; body: string; headers: IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const { hostname, port } = new URL(ui.url)
    const req = request({ hostname, port, path, method: 'GET', headers: cookie === null ? {} : { cookie } }, (res) => {
      let body = ''
      res.on('data', (c: Buffer) => {
        body += c.toString()
      })
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], body, headers: res.headers }),
      )
    })
    req.on('error', reject)
    req.end()
  })
}

/** The cookie a browser holds after opening the printed link. */
function keyCookie(): string {
  return `neuron-key-${new URL(ui.url).port}=${ui.key}`
}

/** An API socket as the UI's own page opens it. */
async function open(
  origin = ui.url,
  cookie: string | null = keyCookie(),
): Promise<{ ws: WebSocket; frames: unknown[]; next: (match: (f: unknown) => boolean) => Promise<unknown> }> {
  const ws = new WebSocket(`${ui.url.replace('http', 'ws')}/api`, {
    origin,
    headers: cookie === null ? {} : { cookie },
  })
  const frames: unknown[] = []
  const waiting = new Set<() => void>()
  ws.on('message', (data) => {
    frames.push(JSON.parse(data.toString()))
    for (const w of waiting) w()
  })
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => resolve())
    ws.once('error', reject)
  })
  const next = (match: (f: unknown) => boolean) =>
    new Promise<unknown>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no matching frame; got ${JSON.stringify(frames)}`)), 10_000)
      const check = () => {
        const found = frames.find(match)
        if (found === undefined) return
        clearTimeout(timer)
        waiting.delete(check)
        resolve(found)
      }
      waiting.add(check)
      check()
    })
  return { ws, frames, next }
}

const replyTo = (id: number) => (f: unknown) => AppReplyFrame.safeParse(f).success && (f as { id: number }).id === id

describe('the browser mode’s UI server', () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-ui-'))
    const staticDir = join(dir, 'renderer')
    await mkdir(join(staticDir, 'assets'), { recursive: true })
    await writeFile(join(staticDir, 'index.html'), INDEX)
    await writeFile(join(staticDir, 'assets', 'app-1234.js'), 'console.log("neuron")')
    await writeFile(join(staticDir, 'assets', 'app-1234.css'), 'body { margin: 0 }')
    await writeFile(join(dir, 'secret.txt'), 'not for the web')
    backend = await AppBackend.start({ dataDir: join(dir, 'app'), trackerUrl: null, defaultModels: [], threads: 1 })
    ui = await serveAppUi(backend, { staticDir })
  })
  afterAll(async () => {
    await ui?.close()
    await backend?.close()
    await cleanup()
  })

  it(
    'serves the built renderer with MIME types, falls back to index.html for app routes, and nothing outside its ' +
      'folder',
    async () => {
      expect(ui.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/)
      expect(await get('/')).toMatchObject({ status: 200, type: 'text/html; charset=utf-8', body: INDEX })
      expect(await get('/assets/app-1234.js')).toMatchObject({ status: 200, type: 'text/javascript; charset=utf-8' })
      expect(await get('/assets/app-1234.css')).toMatchObject({ status: 200, type: 'text/css; charset=utf-8' })
      expect(await get('/earnings')).toMatchObject({ status: 200, body: INDEX })
      expect((await get('/assets/missing.js')).status).toBe(404)
      for (const path of ['/../secret.txt', '/assets/../../secret.txt', '/%2e%2e/secret.txt', '/..%2fsecret.txt']) {
        const res = await get(path)
        expect(res.body).not.toContain('not for the web')
        expect([200, 404]).toContain(res.status)
      }
    },
  )

  it('refuses to start without a built UI', async () => {
    const error = await serveAppUi(backend, { staticDir: join(dir, 'nothing') }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(NeuronError)
    expect(error).toMatchObject({ code: 'ui_not_built', message: 'the UI is not built: run npm run build' })
  })

  it('answers calls over the WebSocket and broadcasts the backend’s events', async () => {
    const a = await open()
    const b = await open()
    try {
      a.ws.send(JSON.stringify({ kind: 'call', id: 1, method: 'settings.get', input: {} }))
      const reply = AppReplyFrame.parse(await a.next(replyTo(1)))
      expect(reply.ok).toBe(true)
      expect(reply.ok && (reply.value as { hostId: string }).hostId).toBe(backend.hostId)
      a.ws.send(JSON.stringify({ kind: 'call', id: 2, method: 'hosting.stop', input: {} }))
      await a.next(replyTo(2))
      // The other window hears the change too.
      const event = AppEventFrame.parse(await b.next((f) => AppEventFrame.safeParse(f).success))
      expect(event).toMatchObject({ kind: 'event', event: 'hosting.status', data: { phase: 'idle' } })
    } finally {
      a.ws.close()
      b.ws.close()
    }
  })

  it('admits only the browser given this run’s key: the printed link sets it as a cookie', async () => {
    expect(ui.openUrl).toBe(`${ui.url}/?key=${ui.key}`)
    const bare = await get('/', null)
    expect(bare.status).toBe(401)
    expect(bare.body).toContain('Open Neuron with its key')
    expect(bare.body).not.toContain('ui-key-error')
    const wrong = await get('/?key=wrong', null)
    expect(wrong.status).toBe(401)
    expect(wrong.body).toContain('That is not this app’s key')
    // Whatever was pasted is never written back into the page.
    expect((await get('/?key=%3Cscript%3Ealert(1)%3C%2Fscript%3E', null)).body).not.toContain('<script>alert')
    const opened = await get(`/?key=${ui.key}`, null)
    expect(opened.status).toBe(303)
    expect(opened.headers.location).toBe('/')
    expect(String(opened.headers['set-cookie'])).toContain(`${keyCookie()}; HttpOnly; SameSite=Strict`)
    // Assets are the public build; the API is not.
    expect((await get('/assets/app-1234.js', null)).status).toBe(200)
    expect(String(await open(ui.url, null).catch((e: unknown) => e))).toMatch(/401/)
    expect(
      String(
        await open(ui.url, `neuron-key-${new URL(ui.url).port}=${'x'.repeat(ui.key.length)}`).catch((e: unknown) => e),
      ),
    ).toMatch(/401/)
  })

  it('refuses a socket from a page on another origin', async () => {
    const error = await open('http://evil.example').catch((e: unknown) => e)
    expect(String(error)).toMatch(/403/)
  })

  it('answers malformed frames with a typed error and keeps serving', async () => {
    const a = await open()
    a.ws.send(JSON.stringify({ kind: 'call', id: 7, method: 42 }))
    const bad = AppReplyFrame.parse(await a.next(replyTo(7)))
    expect(bad.ok === false && bad.error.code).toBe('bad_request')
    a.ws.send(JSON.stringify({ kind: 'call', id: 8, method: 'no.such.method', input: {} }))
    const unknown = AppReplyFrame.parse(await a.next(replyTo(8)))
    expect(unknown.ok === false && unknown.error.code).toBe('bad_request')
    const closed = new Promise<{ code: number; reason: string }>((resolve) =>
      a.ws.once('close', (code, reason) => resolve({ code, reason: reason.toString() })),
    )
    a.ws.send('{ not json')
    expect(await closed).toEqual({ code: 1007, reason: 'bad_request: send text frames holding one JSON AppCallFrame' })
    const b = await open()
    try {
      b.ws.send(JSON.stringify({ kind: 'call', id: 1, method: 'models.list', input: {} }))
      expect(AppReplyFrame.parse(await b.next(replyTo(1)))).toEqual({
        kind: 'reply',
        id: 1,
        ok: true,
        value: { models: [] },
      })
    } finally {
      b.ws.close()
    }
  })
})
