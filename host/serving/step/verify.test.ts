// A verify step (speculative decoding) at a real host of the whole stories260K model, frames handed to the server
// directly: the greedy token after every position, the next step starting inside the checked positions (the cache
// rolled back past the drafts that did not match), and the refusals before any work.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { forwardFrame } from '../../../dataplane/hop-frames'
import { packModel } from '../../../gguf/pack'
import { NodeIdentity } from '../../../identity/keys'
import { manifestSha256, signOpen, signTicket } from '../../../identity/tickets'
import { ShardRuntime } from '../../../native'
import {
  decodeFrame,
  FLAG_VERIFY,
  type Frame,
  jsonFrame,
  type Manifest,
  Receipt,
  readJson,
  readTrailer,
  SampledToken,
} from '../../../protocol'
import { STORIES_260K, scratchDir } from '../../../test/models'
import { ShardServer } from '../shard-server'

const trackerKey = NodeIdentity.generate()
const clientKey = NodeIdentity.generate()
const hostKey = NodeIdentity.generate()
const PROMPT = [1, 403, 407, 261, 378]
let dir = ''
let cleanup: () => Promise<void> = async () => {}
let manifest: Manifest
let runtime: ShardRuntime
let server: ShardServer

const session = (n: number) => n.toString(16).padStart(32, '0')

async function open(s: string, temperature = 0): Promise<void> {
  const body = {
    modelId: manifest.modelId,
    blocks: [0, 5] as [number, number],
    maxTokens: 64,
    sampling: { temperature },
  }
  const ticket = signTicket(trackerKey, {
    session: s,
    clientKey: clientKey.publicKey,
    hostId: hostKey.id,
    blocks: body.blocks,
    maxTokens: body.maxTokens,
    promptTokens: PROMPT.length,
    modelId: manifest.modelId,
    manifestSha256: manifestSha256(manifest),
    price: { promptMicroPerToken: 25, completionMicroPerToken: 100 },
    expiresAt: Date.now() + 60_000,
  })
  const answer = await send(jsonFrame('open', s, 0, { ...body, ticket, signature: signOpen(clientKey, ticket, body) }))
  expect(errorOf(answer), Buffer.from(answer.payload).toString()).toBe('ok')
}

async function send(bytes: Uint8Array): Promise<Frame> {
  return decodeFrame(await server.handle(bytes, 'ws:1'))
}

/** A signed step of token ids; FLAG_VERIFY when `verify`. */
function step(s: string, n: number, position: number, ids: number[], verify = false): Promise<Frame> {
  const data = Int32Array.from(ids)
  const input = { dtype: 'i32' as const, tokens: ids.length, width: 1, payload: new Uint8Array(data.buffer) }
  return send(
    forwardFrame(input, verify ? FLAG_VERIFY : 0, s, n, position, {
      identity: clientKey,
      hostId: hostKey.id,
      blocks: [0, 5],
    }),
  )
}

const tokenOf = (f: Frame) => readJson(f, SampledToken)
const errorOf = (f: Frame) =>
  f.kind === 'error' ? (JSON.parse(Buffer.from(f.payload).toString()) as { code: string }).code : f.kind

describe('verify steps at a host', () => {
  let greedy: number[] = []
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
    manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed') })
    const artifacts = manifest.artifacts.map((a) => join(dir, 'packed', a.file))
    runtime = await ShardRuntime.load({ artifacts, blocks: [0, 5], embed: true, head: true, threads: 1 })
    const tickets = {
      trackerKey: () => trackerKey.publicKey,
      hostId: hostKey.id,
      manifestSha256: manifestSha256(manifest),
    }
    server = new ShardServer(runtime, {
      modelId: manifest.modelId,
      blocks: [0, 5],
      embed: true,
      head: true,
      nEmbd: manifest.nEmbd,
      tickets,
      maxSessions: 4,
      signer: hostKey,
    })
    // the plain greedy continuation, one step per token
    await open(session(1))
    greedy = [tokenOf(await step(session(1), 1, 0, PROMPT)).token]
    for (let i = 0; i < 6; i++)
      greedy.push(tokenOf(await step(session(1), i + 2, PROMPT.length + i, [greedy[i] as number])).token)
    await send(jsonFrame('close', session(1), 0, {}))
  }, 60_000)
  afterAll(async () => {
    await server?.close()
    runtime?.dispose()
    await cleanup()
  })

  it(
    'answers the greedy token after every checked position, and the next step rolls back to where the drafts ' +
      'stopped matching',
    async () => {
      const s = session(2)
      await open(s)
      const P = PROMPT.length
      expect(tokenOf(await step(s, 1, 0, PROMPT)).token).toBe(greedy[0])
      const g = greedy as [number, number, number, number, number, number, number]
      // drafts: g1 (right), a wrong token, g3: the route keeps g0 g1 and gives g2 itself
      const wrong = (g[2] + 1) % manifest.nVocab
      const first = await step(s, 2, P, [g[0], g[1], wrong, g[3]], true)
      const verified = tokenOf(first).verified?.map((v) => v.token)
      expect(verified?.slice(0, 2)).toEqual([g[1], g[2]])
      expect(readTrailer(first, Receipt)?.tokens).toBe(4)
      // the next step starts at the position after the accepted draft: the wrong token's position, overwritten
      const second = await step(s, 3, P + 2, [g[2], g[3], g[4]], true)
      expect(tokenOf(second).verified?.map((v) => v.token)).toEqual([g[3], g[4], g[5]])
      // all accepted: the next continues after the last checked position
      expect(tokenOf(await step(s, 4, P + 5, [g[5]], true)).verified?.map((v) => v.token)).toEqual([g[6]])
      await send(jsonFrame('close', s, 0, {}))
    },
  )

  it(
    'refuses before any work: a step that goes back past a verify step, several tokens without the flag, a verify ' +
      'step under sampling',
    async () => {
      const s = session(3)
      await open(s)
      const P = PROMPT.length
      await step(s, 1, 0, PROMPT)
      await step(s, 2, P, [greedy[0] as number, greedy[1] as number], true)
      expect(errorOf(await step(s, 3, P, [greedy[0] as number], true))).toBe('step_out_of_order')
      expect(errorOf(await step(s, 3, P + 3, [greedy[0] as number], true))).toBe('step_out_of_order')
      expect(errorOf(await step(s, 3, P + 1, [greedy[1] as number, greedy[2] as number]))).toBe('tokens_not_ticketed')
      const sampled = session(4)
      await open(sampled, 0.7)
      await step(sampled, 1, 0, PROMPT)
      expect(errorOf(await step(sampled, 2, P, [greedy[0] as number, greedy[1] as number], true))).toBe(
        'speculation_greedy_only',
      )
    },
  )
})
