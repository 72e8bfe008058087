import { createHash } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'

/** A file a repository of the test Hub holds. */
export interface HubTestFile {
  readonly path: string
  readonly bytes: Buffer
  /** Served as an LFS file (with its sha256 in the tree), as every GGUF on the Hub is; default true. */
  readonly lfs?: boolean
}

export interface HubTestRepo {
  readonly id: string
  readonly files: readonly HubTestFile[]
  /** Downloads need a token in `tokens` (listing and info do not, as on the Hub). */
  readonly gated?: boolean
  readonly downloads?: number
}

/** What a test makes the CDN do once to a file's next download. */
export interface CdnTrouble {
  /** Close the connection after this many bytes of the body. */
  readonly cutAfter?: number
  /** Serve the bytes with one flipped (a wrong sha256). */
  readonly corrupt?: boolean
}

/**
 * A local HTTP server that answers as the Hugging Face Hub does, for tests (the real Hub cannot be reached on this
 * machine): `/api/models` search, model info, the paged tree with LFS sha256, `resolve` answering 302 to a CDN on
 * another origin with X-Linked-Etag, X-Error-Code refusals (RepoNotFound, EntryNotFound, GatedRepo), and a CDN that
 * serves ranges with ETag = sha256. Every request is logged for the test to read.
 */
export class HubTestServer {
  readonly requests: {
    readonly url: string
    readonly range?: string
    readonly authorization?: string
    readonly cdn: boolean
  }[] = []
  readonly trouble = new Map<string, CdnTrouble[]>()
  private readonly commit = createHash('sha1').update('neuron-test-hub').digest('hex')

  private constructor(
    private readonly hub: Server,
    private readonly cdn: Server,
    readonly repos: Map<string, HubTestRepo>,
    readonly tokens: Set<string>,
    /** Tree entries per page (the Hub pages by 1 000). */
    readonly pageSize: number,
  ) {}

  static async start(
    repos: readonly HubTestRepo[],
    options: { tokens?: string[]; pageSize?: number } = {},
  ): Promise<HubTestServer> {
    const hub = createServer()
    const cdn = createServer()
    const server = new HubTestServer(
      hub,
      cdn,
      new Map(repos.map((r) => [r.id, r])),
      new Set(options.tokens ?? []),
      options.pageSize ?? 1000,
    )
    hub.on('request', (req, res) => server.answerHub(req, res))
    cdn.on('request', (req, res) => server.answerCdn(req, res))
    await Promise.all([listen(hub), listen(cdn)])
    return server
  }

  get endpoint(): string {
    return `http://127.0.0.1:${(this.hub.address() as AddressInfo).port}`
  }

  private get cdnOrigin(): string {
    return `http://127.0.0.1:${(this.cdn.address() as AddressInfo).port}`
  }

  /** The Range header of each CDN request from request number `since` on (undefined: the whole file asked). */
  cdnRanges(since = 0): (string | undefined)[] {
    return this.requests
      .slice(since)
      .filter((r) => r.cdn)
      .map((r) => r.range)
  }

  /** Makes the CDN misbehave on the next downloads of `path` (any repository), one entry per download. */
  troubleNext(path: string, ...what: CdnTrouble[]): void {
    this.trouble.set(path, [...(this.trouble.get(path) ?? []), ...what])
  }

  async close(): Promise<void> {
    for (const s of [this.hub, this.cdn]) {
      s.closeAllConnections()
      await new Promise<void>((resolve) => s.close(() => resolve()))
    }
  }

  private log(req: IncomingMessage, cdn: boolean): void {
    this.requests.push({
      url: req.url ?? '',
      cdn,
      ...(req.headers.range ? { range: req.headers.range } : {}),
      ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
    })
  }

  private answerHub(req: IncomingMessage, res: ServerResponse): Answered {
    this.log(req, false)
    const url = new URL(req.url ?? '/', this.endpoint)
    const token = req.headers.authorization?.replace(/^Bearer /, '')
    const path = decodeURIComponent(url.pathname)
    if (path === '/api/models') {
      const q = (url.searchParams.get('search') ?? '').toLowerCase()
      const hits = [...this.repos.values()]
        .filter((r) => r.id.toLowerCase().includes(q) && r.files.some((f) => f.path.endsWith('.gguf')))
        .sort((a, b) => (b.downloads ?? 0) - (a.downloads ?? 0))
        .slice(0, Number(url.searchParams.get('limit') ?? 20))
        .map((r) => ({
          _id: r.id,
          id: r.id,
          downloads: r.downloads ?? 0,
          likes: 1,
          gated: r.gated ? 'manual' : false,
          tags: ['gguf'],
        }))
      return json(res, 200, hits)
    }
    const api = /^\/api\/models\/([^/]+\/[^/]+)(?:\/tree\/([^/]+))?$/.exec(path)
    if (api) {
      const repo = this.repos.get(api[1] ?? '')
      if (repo === undefined) return refuse(res, token ? 404 : 401, 'RepoNotFound', 'Repository not found')
      if (api[2] === undefined)
        return json(res, 200, { id: repo.id, sha: this.commit, gated: repo.gated ? 'manual' : false, private: false })
      const start = Number(url.searchParams.get('cursor') ?? 0)
      const entries = repo.files.map((f) => ({
        type: 'file',
        oid: createHash('sha1').update(f.bytes).digest('hex'),
        size: f.bytes.length,
        path: f.path,
        ...(f.lfs === false ? {} : { lfs: { oid: sha256(f.bytes), size: f.bytes.length, pointerSize: 134 } }),
      }))
      const page = entries.slice(start, start + this.pageSize)
      if (start + this.pageSize < entries.length) {
        res.setHeader(
          'link',
          `<${this.endpoint}${url.pathname}?recursive=true&cursor=${start + this.pageSize}>; rel="next"`,
        )
      }
      return json(res, 200, page)
    }
    const resolve = /^\/([^/]+\/[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(path)
    if (resolve) {
      const repo = this.repos.get(resolve[1] ?? '')
      if (repo === undefined) return refuse(res, token ? 404 : 401, 'RepoNotFound', 'Repository not found')
      if (repo.gated && (token === undefined || !this.tokens.has(token))) {
        return refuse(res, token === undefined ? 401 : 403, 'GatedRepo', `Access to model ${repo.id} is restricted.`)
      }
      const file = repo.files.find((f) => f.path === resolve[3])
      if (file === undefined) return refuse(res, 404, 'EntryNotFound', 'Entry not found')
      const sum = sha256(file.bytes)
      res.writeHead(302, {
        location: `${this.cdnOrigin}/blobs/${sum}?path=${encodeURIComponent(file.path)}&signature=test`,
        'x-linked-etag': `"${sum}"`,
        'x-linked-size': String(file.bytes.length),
        'x-repo-commit': this.commit,
      })
      return void res.end()
    }
    return refuse(res, 404, 'EntryNotFound', 'Not found')
  }

  private answerCdn(req: IncomingMessage, res: ServerResponse): Answered {
    this.log(req, true)
    const url = new URL(req.url ?? '/', this.cdnOrigin)
    const sum = /^\/blobs\/([0-9a-f]{64})$/.exec(url.pathname)?.[1]
    const named = url.searchParams.get('path')
    const file = [...this.repos.values()]
      .flatMap((r) => r.files)
      .find((f) => sha256(f.bytes) === sum && f.path === named)
    if (file === undefined) return refuse(res, 404, 'EntryNotFound', 'no such blob')
    const trouble = this.trouble.get(file.path)?.shift() ?? {}
    let body = file.bytes
    if (trouble.corrupt) {
      body = Buffer.from(file.bytes)
      body[body.length >> 1] = (body[body.length >> 1] ?? 0) ^ 0xff
    }
    const range = /^bytes=(\d+)-$/.exec(req.headers.range ?? '')
    const start = range ? Number(range[1]) : 0
    if (start >= body.length && body.length > 0) return refuse(res, 416, 'RangeNotSatisfiable', 'range')
    // a cut: the body ends after exactly `cutAfter` bytes, so the client holds every one of them when it sees the end
    // (a reset mid-body makes fetch drop the chunks it had queued, and a test would see the cut land anywhere before)
    const whole = body.subarray(start)
    const sent =
      trouble.cutAfter !== undefined && trouble.cutAfter < whole.length ? whole.subarray(0, trouble.cutAfter) : whole
    const headers = { etag: `"${sum}"`, 'accept-ranges': 'bytes', 'content-length': String(sent.length) }
    res.writeHead(
      range ? 206 : 200,
      range ? { ...headers, 'content-range': `bytes ${start}-${start + sent.length - 1}/${body.length}` } : headers,
    )
    return res.end(sent)
  }
}

function sha256(bytes: Buffer): string {
  return createHash('sha256').update(bytes).digest('hex')
}

/** An answer sent; handlers return it so that each branch ends where it answers. */
type Answered = ServerResponse | undefined

function json(res: ServerResponse, status: number, body: unknown): Answered {
  res.writeHead(status, { 'content-type': 'application/json' })
  return res.end(JSON.stringify(body))
}

function refuse(res: ServerResponse, status: number, code: string, message: string): Answered {
  res.writeHead(status, { 'x-error-code': code, 'x-error-message': message, 'content-type': 'application/json' })
  return res.end(JSON.stringify({ error: message }))
}

function listen(server: Server): Promise<void> {
  return new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
}
