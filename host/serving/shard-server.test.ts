import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { packModel } from '../../gguf/pack'
import { ShardRuntime } from '../../native'
import { decodeFrame, encodeFrame, type Frame, jsonFrame, type Manifest, readJson, SampledToken } from '../../protocol'
import { HAVE_STORIES, NEEDS_STORIES, STORIES_260K, scratchDir } from '../../test/models'
import { ShardServer } from './shard-server'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let manifest: Manifest
let runtime: ShardRuntime
let server: ShardServer
let url = ''
const MAX_FRAME = 64 * 1024

/** One frame over a fresh WebSocket connection, as any client would send it. */
async function exchange(bytes: Uint8Array): Promise<Frame> {
  const socket = new WebSocket(url)
  await new Promise((resolve, reject) => {
    socket.once('open', resolve)
    socket.once('error', reject)
  })
  try {
    const reply = new Promise<Buffer>((resolve) => socket.once('message', (data) => resolve(data as Buffer)))
    socket.send(bytes)
    return decodeFrame(await reply)
  } finally {
    socket.close()
  }
}

const session = (n: number) => n.toString(16).padStart(32, '0')
const tokens = (s: string, step: number, position: number, ids: number[]) => {
  const data = Int32Array.from(ids)
  return encodeFrame({
    kind: 'forward',
    dtype: 'i32',
    flags: 0,
    session: s,
    step,
    position,
    tokens: ids.length,
    width: 1,
    payload: new Uint8Array(data.buffer),
  })
}
const errorOf = (f: Frame) => (f.kind === 'error' ? (JSON.parse(Buffer.from(f.payload).toString()) as { code: string; message: string }) : undefined)

describe.skipIf(!HAVE_STORIES)(`shard server on loopback${NEEDS_STORIES}`, () => {
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
    server = new ShardServer(runtime, {
      modelId: manifest.modelId,
      blocks: [0, 5],
      embed: true,
      head: true,
      nEmbd: manifest.nEmbd,
      maxSessions: 2,
      maxFrameBytes: MAX_FRAME,
    })
    url = await server.listen()
  })
  afterAll(async () => {
    await server?.close()
    runtime?.dispose()
    await cleanup()
  })

  it('answers a burst of bad frames with typed errors, and a good session still works after', async () => {
    const open = (s: string, body: object) => jsonFrame('open', s, 0, body)
    const good = { modelId: manifest.modelId, blocks: [0, 5], maxTokens: 64, sampling: { temperature: 0 } }
    await exchange(open(session(1), good))
    const hidden = new Float32Array(manifest.nEmbd * 2)
    const cases: [Uint8Array, string, RegExp][] = [
      [Buffer.from('hello'), 'bad_frame', /at least 48 bytes/],
      [Buffer.alloc(64, 7), 'bad_frame', /bad magic/],
      [tokens(session(1), 1, 0, [1, 2]).subarray(0, 50), 'bad_frame', /payload bytes/],
      [
        encodeFrame({
          kind: 'forward',
          dtype: 'f32',
          flags: 0,
          session: session(1),
          step: 1,
          position: 0,
          tokens: 2,
          width: manifest.nEmbd,
          payload: new Uint8Array(hidden.buffer),
        }),
        'bad_frame',
        /takes token ids/,
      ],
      [tokens(session(99), 1, 0, [1]), 'unknown_session', /no open session/],
      [tokens(session(1), 1, 0, [manifest.nVocab + 5]), 'token_out_of_range', /517/],
      [tokens(session(1), 1, 63, [1, 2]), 'position_(gap|past_max)', /6[345]/],
      [open(session(2), { ...good, modelId: 'other' }), 'wrong_model', /serves stories260k, not other/],
      [open(session(3), { ...good, blocks: [3, 7] }), 'range_not_served', /\[3, 7\) must lie inside it/],
      [open(session(1), good), 'session_exists', /already open/],
      [open(session(4), { modelId: 7 }), 'bad_frame', /modelId/],
      [new Uint8Array(MAX_FRAME + 1), 'frame_too_large', /exceeds this host's 65536/],
      [jsonFrame('hidden', session(1), 1, {}), 'bad_frame', /accepts open, forward and close/],
    ]
    for (let round = 0; round < 3; round++) {
      for (const [bytes, code, message] of cases) {
        const reply = await exchange(bytes)
        const error = errorOf(reply)
        expect(error?.code, `round ${round}: expected ${code}, got ${JSON.stringify(error)}`).toMatch(
          new RegExp(`^${code === 'bad_token' || code === 'position_out_of_range' ? '.+' : code}$`),
        )
        expect(error?.message).toMatch(message)
      }
    }
    // Session 1 took no step from the burst; it prefills and samples as if nothing happened.
    const reply = await exchange(tokens(session(1), 1, 0, [1, 403, 407, 261, 378]))
    expect(reply.kind).toBe('token')
    expect(readJson(reply, SampledToken).token).toBeGreaterThan(0)
    expect(server.activeSessions).toBe(1)
  })
})
