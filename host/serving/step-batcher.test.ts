// Continuous batching on a real shard server (stories260K on loopback): 8 sessions stepping at once share graphs and
// each still gets the greedy tokens it gets alone; a session closing or sending a bad step mid-batch fails alone.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { forwardFrame } from '../../dataplane/hop-frames'
import { packModel } from '../../gguf/pack'
import { NodeIdentity } from '../../identity/keys'
import { manifestSha256, signOpen, signTicket } from '../../identity/tickets'
import { ShardRuntime } from '../../native'
import { decodeFrame, type Frame, jsonFrame, type Manifest, readJson, SampledToken } from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { ShardServer } from './shard-server'

const SESSIONS = 8
const STEPS = 12
const PROMPTS = Array.from({ length: SESSIONS }, (_, i) => [
  1,
  ...Array.from({ length: 1 + (i % 4) }, (_, j) => 260 + ((i * 29 + j * 7) % 140)),
])
const trackerKey = NodeIdentity.generate()
const clientKey = NodeIdentity.generate()
const HOST_ID = 'cd'.repeat(10)

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let manifest: Manifest
let runtime: ShardRuntime
let server: ShardServer
let url = ''

/** A connection whose answers come back in the order its frames went out. */
async function connect(): Promise<{ send(bytes: Uint8Array): Promise<Frame>; close(): void }> {
  const socket = new WebSocket(url)
  await new Promise((resolve, reject) => {
    socket.once('open', resolve)
    socket.once('error', reject)
  })
  const waiting: ((f: Frame) => void)[] = []
  socket.on('message', (data) => waiting.shift()?.(decodeFrame(data as Buffer)))
  return {
    send: (bytes) =>
      new Promise<Frame>((resolve) => {
        waiting.push(resolve)
        socket.send(bytes)
      }),
    close: () => socket.close(),
  }
}

const sessionId = (n: number) => (0x5000 + n).toString(16).padStart(32, '0')
function open(s: string): Uint8Array {
  const body = {
    modelId: manifest.modelId,
    blocks: [0, 5] as [number, number],
    maxTokens: 64,
    sampling: { temperature: 0 },
  }
  const t = signTicket(trackerKey, {
    session: s,
    clientKey: clientKey.publicKey,
    hostId: HOST_ID,
    blocks: body.blocks,
    maxTokens: body.maxTokens,
    promptTokens: body.maxTokens,
    modelId: manifest.modelId,
    manifestSha256: manifestSha256(manifest),
    price: { promptMicroPerToken: 25, completionMicroPerToken: 100 },
    expiresAt: Date.now() + 60_000,
  })
  return jsonFrame('open', s, 0, { ...body, ticket: t, signature: signOpen(clientKey, t, body) })
}
/** A step of token ids, signed by the session's client as every step is. */
function step(s: string, n: number, position: number, ids: number[]): Uint8Array {
  const data = Int32Array.from(ids)
  const input = { dtype: 'i32' as const, tokens: ids.length, width: 1, payload: new Uint8Array(data.buffer) }
  return forwardFrame(input, 0, s, n, position, { identity: clientKey, hostId: HOST_ID, blocks: [0, 5] })
}
const tokenOf = (f: Frame) => {
  if (f.kind !== 'token') throw new Error(`expected a token, got ${f.kind}: ${Buffer.from(f.payload).toString()}`)
  return readJson(f, SampledToken).token
}

/** Greedy generation of one session over its own connection; `at` may replace a step's frame (or close instead). */
async function generate(
  k: number,
  id: string,
  at?: (n: number) => 'close' | number[] | undefined,
): Promise<(number | string)[]> {
  const c = await connect()
  try {
    expect((await c.send(open(id))).kind).toBe('ok')
    const out: (number | string)[] = []
    let ids = PROMPTS[k] as number[]
    let position = 0
    for (let n = 1; n <= STEPS; n++) {
      const change = at?.(n)
      if (change === 'close') {
        // the close goes out while the step is in flight: it is acknowledged at once, the step still answers
        // (its cache is freed once the batch settles); the two answers may come in either order
        const answers = await Promise.all([c.send(step(id, n, position, ids)), c.send(jsonFrame('close', id, 0, {}))])
        out.push(...answers.map((a) => a.kind).sort())
        return out
      }
      const reply = await c.send(step(id, n, position, change ?? ids))
      if (reply.kind === 'error') {
        out.push(`error:${(JSON.parse(Buffer.from(reply.payload).toString()) as { code: string }).code}`)
        continue
      }
      const token = tokenOf(reply)
      out.push(token)
      position += ids.length
      ids = [token]
    }
    await c.send(jsonFrame('close', id, 0, {}))
    return out
  } finally {
    c.close()
  }
}

describe(`continuous batching on one host`, () => {
  let solo: (number | string)[][] = []
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
    manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed') })
    runtime = await ShardRuntime.load({
      artifacts: manifest.artifacts.map((a) => join(dir, 'packed', a.file)),
      blocks: [0, 5],
      embed: true,
      head: true,
      threads: 1,
    })
    const tickets = {
      trackerKey: () => trackerKey.publicKey,
      hostId: HOST_ID,
      manifestSha256: manifestSha256(manifest),
    }
    server = new ShardServer(runtime, {
      modelId: manifest.modelId,
      blocks: [0, 5],
      embed: true,
      head: true,
      nEmbd: manifest.nEmbd,
      tickets,
      maxSessions: SESSIONS,
      limits: { maxSessionsPerClient: SESSIONS },
    })
    url = await server.listen()
    // each session alone first: one at a time, so every graph holds one session
    solo = []
    for (let k = 0; k < SESSIONS; k++) solo.push(await generate(k, sessionId(100 + k)))
  })
  afterAll(async () => {
    await server?.close()
    runtime?.dispose()
    await cleanup()
  })

  it('8 concurrent greedy sessions share graphs and each produces exactly its solo tokens', async () => {
    expect(server.batcher.batching).toBe(true)
    const batches = server.batcher.stats.batches
    const together = await Promise.all(PROMPTS.map((_, k) => generate(k, sessionId(200 + k))))
    expect(together).toEqual(solo)
    expect(server.batcher.stats.largest).toBeGreaterThan(1)
    expect(server.batcher.stats.batches - batches).toBeLessThan(SESSIONS * STEPS)
  })

  it('a session closing mid-batch, or sending a bad step, fails alone; the others keep their solo tokens', async () => {
    const together = await Promise.all(
      PROMPTS.map((_, k) =>
        generate(k, sessionId(300 + k), (n) => {
          if (k === 2 && n === 4) return 'close'
          if (k === 5 && n === 3) return [100_000]
          return undefined
        }),
      ),
    )
    expect(together[2]).toEqual([...(solo[2] as number[]).slice(0, 3), 'ok', 'token'])
    // the bad step is refused with a typed error; the session then goes on from where it was
    expect(together[5]?.slice(0, 3)).toEqual([...(solo[5] as number[]).slice(0, 2), 'error:token_out_of_range'])
    for (const k of [0, 1, 3, 4, 6, 7]) expect(together[k], `session ${k}`).toEqual(solo[k])
  })
})
