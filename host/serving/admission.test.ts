// Admission at a real host of the whole stories260K model over loopback: the probe slots a full host keeps for its
// tracker, and the bounds on sessions, KV capacity, unstepped opens and connections, each refused before any work.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { packModel } from '../../gguf/pack'
import { NodeIdentity } from '../../identity/keys'
import { ShardRuntime } from '../../native'
import {
  decodeFrame,
  type Frame,
  jsonFrame,
  MAX_PROBE_TOKENS,
  type Manifest,
  readJson,
  SampledToken,
} from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { connect, errorOf, session, ticketing, tokens } from '../../test/shard-client'
import { PROBE_SLOTS } from './admission'
import { ShardServer } from './shard-server'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let manifest: Manifest
let runtime: ShardRuntime
let serverOptions: ReturnType<typeof ticketing>['serverOptions']
let ticketedOpen: ReturnType<typeof ticketing>['ticketedOpen']

describe(`shard server on loopback`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
    manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed') })
    ;({ serverOptions, ticketedOpen } = ticketing(manifest))
    runtime = await ShardRuntime.load({
      artifacts: manifest.artifacts.map((a) => join(dir, 'packed', a.file)),
      blocks: [0, 5],
      embed: true,
      head: true,
      threads: 1,
    })
  })
  afterAll(async () => {
    runtime?.dispose()
    await cleanup()
  })

  describe("a full host and the tracker's probes", () => {
    let full: ShardServer
    let fullUrl = ''
    beforeAll(async () => {
      full = new ShardServer(runtime, serverOptions({ maxSessions: 2, limits: { maxSessionsPerClient: 1 } }))
      fullUrl = await full.listen()
    })
    afterAll(async () => {
      await full?.close()
    })
    const body = (maxTokens: number) => ({
      modelId: manifest.modelId,
      blocks: [0, 5] as [number, number],
      maxTokens,
      sampling: { temperature: 0 },
    })

    it(
      'a client cannot open a session in the probe slots, by forging its ticket or by asking, while its sessions ' +
        'are taken',
      async () => {
        const c = await connect(fullUrl)
        try {
          expect(
            (await c.exchange(ticketedOpen(session(300), body(64), {}, { client: NodeIdentity.generate() }))).kind,
          ).toBe('ok')
          expect(
            (await c.exchange(ticketedOpen(session(301), body(64), {}, { client: NodeIdentity.generate() }))).kind,
          ).toBe('ok')
          const attacker = NodeIdentity.generate()
          expect(
            errorOf(await c.exchange(ticketedOpen(session(302), body(8), {}, { client: attacker }))),
          ).toMatchObject({
            code: 'busy',
          })
          // its own ticket with the probe mark added: the tracker never signed that
          expect(
            errorOf(
              await c.exchange(
                ticketedOpen(session(303), body(8), {}, { client: attacker, forge: (t) => ({ ...t, probe: true }) }),
              ),
            ),
          ).toMatchObject({
            code: 'bad_ticket',
          })
          // the mark in the open, outside the ticket, is no mark at all
          expect(
            errorOf(
              await c.exchange(ticketedOpen(session(304), { ...body(8), probe: true }, {}, { client: attacker })),
            ),
          ).toMatchObject({ code: 'busy' })
          expect(full.activeSessions).toBe(2)
        } finally {
          for (const s of [300, 301]) await c.exchange(jsonFrame('close', session(s), 0, {}))
          c.close()
        }
      },
    )

    it(
      `answers the tracker's probes past its session limit, ${PROBE_SLOTS} at once, each of a probe's tokens at ` +
        `most, and counts them in no session`,
      async () => {
        const c = await connect(fullUrl)
        const gateway = NodeIdentity.generate()
        try {
          expect(
            (await c.exchange(ticketedOpen(session(310), body(64), {}, { client: NodeIdentity.generate() }))).kind,
          ).toBe('ok')
          expect(
            (await c.exchange(ticketedOpen(session(311), body(64), {}, { client: NodeIdentity.generate() }))).kind,
          ).toBe('ok')
          expect(
            errorOf(await c.exchange(ticketedOpen(session(312), body(12), {}, { client: gateway }))),
          ).toMatchObject({
            code: 'busy',
          })
          // one key, past its one session a key may hold: a probe is held to the probe slots' limits alone
          for (let i = 0; i < PROBE_SLOTS; i++)
            expect(
              (await c.exchange(ticketedOpen(session(313 + i), body(12), { probe: true }, { client: gateway }))).kind,
            ).toBe('ok')
          const answer = await c.exchange(tokens(session(313), 1, 0, [1, 403, 407], { signer: gateway }))
          expect(answer.kind).toBe('token')
          expect(readJson(answer, SampledToken).token).toBeGreaterThanOrEqual(0)
          expect(full.activeSessions).toBe(2)
          expect(
            errorOf(await c.exchange(ticketedOpen(session(320), body(12), { probe: true }, { client: gateway }))),
          ).toMatchObject({
            code: 'probe_slots_full',
          })
          await c.exchange(jsonFrame('close', session(313), 0, {}))
          expect(
            errorOf(
              await c.exchange(
                ticketedOpen(session(321), body(MAX_PROBE_TOKENS + 1), { probe: true }, { client: gateway }),
              ),
            ),
          ).toMatchObject({
            code: 'too_many_tokens',
            message: expect.stringMatching(new RegExp(`probe holds at most ${MAX_PROBE_TOKENS} tokens`)),
          })
          expect(
            (await c.exchange(ticketedOpen(session(322), body(MAX_PROBE_TOKENS), { probe: true }, { client: gateway })))
              .kind,
          ).toBe('ok')
        } finally {
          for (const s of [310, 311, 314, 322]) await c.exchange(jsonFrame('close', session(s), 0, {}))
          c.close()
        }
      },
    )
  })

  describe('a host with small limits', () => {
    let limited: ShardServer
    let limitedUrl = ''
    beforeAll(async () => {
      limited = new ShardServer(
        runtime,
        serverOptions({
          maxSessions: 3,
          limits: { maxSessionTokens: 256, kvBudgetTokens: 640, maxSessionsPerClient: 2 },
          unsteppedSessionMs: 1000,
          maxConnections: 3,
          maxInFlightPerConnection: 2,
        }),
      )
      limitedUrl = await limited.listen()
    })
    afterAll(async () => {
      await limited?.close()
    })
    const body = (maxTokens: number) => ({
      modelId: manifest.modelId,
      blocks: [0, 5] as [number, number],
      maxTokens,
      sampling: { temperature: 0 },
    })

    it('refuses an open past its KV capacity before allocating it: the process does not grow', async () => {
      const c = await connect(limitedUrl)
      try {
        const before = process.memoryUsage().rss
        for (let i = 0; i < 4; i++) {
          const error = errorOf(await c.exchange(ticketedOpen(session(100 + i), body(1_000_000))))
          expect(error?.code).toBe('too_many_tokens')
          expect(error?.message).toMatch(/at most 256 tokens; 1000000 asked/)
        }
        const grewMiB = (process.memoryUsage().rss - before) / 2 ** 20
        console.log(`RSS after 4 opens of 1 000 000 tokens: +${grewMiB.toFixed(1)} MiB`)
        expect(grewMiB).toBeLessThan(16)
        expect(limited.activeSessions).toBe(0)
      } finally {
        c.close()
      }
    })

    it(
      'bounds sessions per client key and the KV budget over all sessions; sessions never stepped are evicted, ' +
        'then a session opens and steps',
      async () => {
        const c = await connect(limitedUrl)
        const other = NodeIdentity.generate()
        try {
          expect((await c.exchange(ticketedOpen(session(110), body(256)))).kind).toBe('ok')
          expect((await c.exchange(ticketedOpen(session(111), body(256)))).kind).toBe('ok')
          expect(errorOf(await c.exchange(ticketedOpen(session(112), body(16))))).toMatchObject({
            code: 'too_many_sessions',
          })
          expect(errorOf(await c.exchange(ticketedOpen(session(113), body(256), {}, { client: other })))).toMatchObject(
            {
              code: 'kv_budget_full',
              message: expect.stringMatching(/128 of 640 tokens free; 256 asked/),
            },
          )
          expect((await c.exchange(ticketedOpen(session(114), body(64), {}, { client: other }))).kind).toBe('ok')
          expect(
            errorOf(await c.exchange(ticketedOpen(session(115), body(1), {}, { client: NodeIdentity.generate() }))),
          ).toMatchObject({ code: 'busy' })
          // Nobody steps them: after the 1 s idle timeout for unstepped sessions every slot is free.
          await new Promise((r) => setTimeout(r, 1600))
          expect(limited.activeSessions).toBe(0)
          expect((await c.exchange(ticketedOpen(session(116), body(64)))).kind).toBe('ok')
          expect((await c.exchange(tokens(session(116), 1, 0, [1, 403, 407]))).kind).toBe('token')
          expect((await c.exchange(jsonFrame('close', session(116), 0, {}))).kind).toBe('ok')
        } finally {
          c.close()
        }
      },
    )

    it('caps connections and the frames one connection has in flight', async () => {
      const raw = new WebSocket(limitedUrl)
      await new Promise((resolve) => raw.once('open', resolve))
      const replies: Frame[] = []
      const all = new Promise<void>((resolve) =>
        raw.on('message', (data) => {
          replies.push(decodeFrame(data as Buffer))
          if (replies.length === 6) resolve()
        }),
      )
      raw.send(ticketedOpen(session(120), body(64)))
      await new Promise((r) => setTimeout(r, 100))
      // Five prefills at once: two are taken, the rest refused at once.
      for (let i = 0; i < 5; i++) raw.send(tokens(session(120), 1 + i, 0, [1, 403, 407, 261, 378]))
      await all
      expect(replies.filter((f) => errorOf(f)?.code === 'too_many_in_flight').length).toBeGreaterThanOrEqual(3)
      raw.close()
      await new Promise((resolve) => raw.once('close', resolve))
      // The host lets go of closed connections on its side too.
      await new Promise((r) => setTimeout(r, 200))
      const sockets = await Promise.all([0, 1, 2].map(() => connect(limitedUrl)))
      const refused = new WebSocket(limitedUrl)
      const closed = await new Promise<number>((resolve) => refused.once('close', (code) => resolve(code)))
      expect(closed).toBe(1013)
      for (const s of sockets) s.close()
    })
  })
})
