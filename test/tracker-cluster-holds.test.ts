// Credit holds across two tracker instances on one throwaway PostgreSQL store joined by Redis: a hold
// is a reservation in the store, so the same account cannot hold the same credits on A and on B, a
// re-plan anywhere takes the session's first hold, charges settled on one instance shrink the hold the
// other counts, and an instance that starts later neither counts a live one's holds twice nor releases
// them while they are in use. One protocol-level host (its real key signs the receipts) serves the
// whole model on A. Skipped, with the reason in the name, where PostgreSQL or Redis is not installed.
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import pg from 'pg'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { connectTracker } from '../dataplane/tracker-connection'
import { packModel } from '../gguf/pack'
import { tokenizerGguf } from '../gguf/tokenizer'
import { NodeIdentity } from '../identity/keys'
import {
  ClientToTracker,
  callRpc,
  HostToTracker,
  type Manifest,
  type Receipt,
  type Route,
  receiptMessage,
  stepMessage,
} from '../protocol'
import { maxCost, priceOf } from '../tracker/ledger/pricing'
import type { TrackerOptions } from '../tracker/tracker-options'
import { STORIES_260K, scratchDir } from './models'
import { readyState, TEST_PROFILE } from './peers'
import { type PostgresCluster, postgresMissing, startPostgres } from './postgres'
import { createModelTorrent, Tracker } from './programs'
import { type RedisServer, redisMissing, startRedis } from './redis'

const missing = [await postgresMissing(), await redisMissing()].filter((m) => m !== undefined)
const SKIP = missing.length === 0 ? '' : ` (skipped: ${missing.join('; ')})`
const sid = () => randomBytes(16).toString('hex')
type Socket = Awaited<ReturnType<typeof connectTracker>>

describe.skipIf(missing.length > 0)(`credit holds across two tracker instances on PostgreSQL and Redis${SKIP}`, () => {
  let scratch: { dir: string; cleanup: () => Promise<void> }
  let cluster: PostgresCluster
  let redis: RedisServer
  let common: TrackerOptions
  let a: Tracker
  let b: Tracker
  let manifest: Manifest
  let host: Socket
  let hostId = ''
  const hostKey = NodeIdentity.generate()
  const sockets: Socket[] = []
  let beating: NodeJS.Timeout | undefined

  beforeAll(async () => {
    scratch = await scratchDir('neuron-cluster-holds-')
    ;[cluster, redis] = await Promise.all([startPostgres(), startRedis()])
    common = {
      dbPath: await cluster.createDatabase(),
      redisUrl: redis.url,
      keyPath: join(scratch.dir, 'tracker-key.pem'),
      heartbeatMs: 500,
    }
    a = await Tracker.start(common)
    b = await Tracker.start(common)
    manifest = await packModel({ source: STORIES_260K, out: join(scratch.dir, 'stories'), blocksPerArtifact: 2 })
    const torrent = await createModelTorrent(join(scratch.dir, 'stories'), manifest, [])
    const tokenizer = await tokenizerGguf(join(scratch.dir, 'stories', 'head.gguf'))
    const publisher = await connectTracker(a.url, '/clients', NodeIdentity.generate())
    await callRpc(publisher, ClientToTracker, 'model.publish', { manifest, torrent, tokenizer })
    publisher.close()
    host = await connectTracker(a.url, '/hosts', hostKey)
    // Room for every session the tests plan: only credits may refuse them.
    const roomy = { ...readyState(manifest.modelId, [0, manifest.nLayer]), maxSessions: 64, kvCapacityTokens: 100_000 }
    hostId = (await callRpc(host, HostToTracker, 'host.hello', { profile: TEST_PROFILE, state: roomy })).hostId
    await vi.waitFor(
      () => expect(b.registry.get(hostId)?.online === true && b.catalog.has(manifest.modelId)).toBe(true),
      { timeout: 10_000 },
    )
    // A host heartbeats, or it is offline after three missed beats.
    beating = setInterval(
      () => void callRpc(host, HostToTracker, 'host.heartbeat', { activeSessions: 0 }).catch(() => {}),
      250,
    )
  }, 120_000)

  afterAll(async () => {
    clearInterval(beating)
    for (const s of sockets) s.close()
    host?.close()
    await a?.close()
    await b?.close()
    await Promise.all([cluster?.stop(), redis?.stop()])
    await scratch?.cleanup()
  })

  /** What a session of `maxTokens`, `promptTokens` of them prompt, may cost at the model's price. */
  const cost = (maxTokens: number, promptTokens = 0) =>
    maxCost(priceOf(manifest, {}), manifest.nLayer, promptTokens, maxTokens - promptTokens)

  /** A key with an account of `grantMicro`. */
  async function account(grantMicro: number): Promise<NodeIdentity> {
    const identity = NodeIdentity.generate()
    await a.accounts.create({ publicKey: identity.publicKey, grantMicro })
    return identity
  }

  async function connect(tracker: Tracker, identity: NodeIdentity): Promise<Socket> {
    const socket = await connectTracker(tracker.url, '/clients', identity)
    sockets.push(socket)
    return socket
  }

  const plan = (socket: Socket, session: string, maxTokens: number, promptTokens = 0) =>
    callRpc(socket, ClientToTracker, 'route.plan', { modelId: manifest.modelId, maxTokens, promptTokens, session })

  /**
   * The host's signed receipt for step 1 (the prefill of `tokens` prompt tokens) of a route's one hop, carrying
   * `client`'s step signature.
   */
  function prefill(route: Route, session: string, tokens: number, client: NodeIdentity): Receipt {
    const hop = route.hops[0]
    if (route.hops.length !== 1 || hop?.ticket === undefined) throw new Error('expected a one-hop ticketed route')
    const body = {
      session,
      step: 1,
      hostId,
      blocks: [hop.blocks[0], hop.blocks[1]] as [number, number],
      tokens,
      position: 0,
      modelId: manifest.modelId,
      price: hop.ticket.price,
      tracker: a.identity.publicKey,
      input: 'a'.repeat(64),
      output: 'b'.repeat(64),
    }
    const signed = { ...body, client: client.sign(stepMessage(body)) }
    return { ...signed, signature: hostKey.sign(receiptMessage(signed)) }
  }

  /** The instances tell each other of changes within 100 ms; a failover or a second request comes later than that. */
  const later = () => new Promise((r) => setTimeout(r, 500))

  it(
    'gives one hold, not two, when the same account plans on A and on B at once, each session over half its ' +
      'balance',
    async () => {
      const identity = await account(Math.ceil(cost(1000) * 1.5))
      const [onA, onB] = [await connect(a, identity), await connect(b, identity)]
      const results = await Promise.allSettled([plan(onA, sid(), 1000), plan(onB, sid(), 1000)])
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
      expect(results.filter((r) => r.status === 'rejected').map((r) => (r.reason as { code?: string }).code)).toEqual([
        'insufficient_credits',
      ])
    },
  )

  it('takes the session’s first hold on a re-plan at the other instance, and session.end there frees it', async () => {
    const grant = Math.ceil(cost(1000) * 1.5)
    const identity = await account(grant)
    const [onA, onB] = [await connect(a, identity), await connect(b, identity)]
    const session = sid()
    await plan(onA, session, 1000)
    await later()
    // A failover to B: less than twice the session's cost is enough, as it was on one instance.
    await expect(plan(onB, session, 1000)).resolves.toMatchObject({ hops: [{ hostId }] })
    await expect(plan(onA, sid(), 1000)).rejects.toMatchObject({
      code: 'insufficient_credits',
      details: { availableMicro: grant - cost(1000) },
    })
    await callRpc(onB, ClientToTracker, 'session.end', { session })
    await later()
    await expect(plan(onA, sid(), 1000)).resolves.toMatchObject({ hops: [{ hostId }] })
  })

  it('counts charges settled on the host’s instance against the hold on the client’s', async () => {
    const grant = cost(1000, 4) + cost(500)
    const client = await account(grant)
    const onB = await connect(b, client)
    const session = sid()
    const route = await plan(onB, session, 1000, 4)
    // The host hands its receipt in at A, where it is connected.
    const [paid] = (
      await callRpc(host, HostToTracker, 'receipts.submit', { receipts: [prefill(route, session, 4, client)] })
    ).verdicts
    const price = priceOf(manifest, {})
    expect(paid).toMatchObject({ ok: true, charged: 4 * price.promptMicroPerToken + price.completionMicroPerToken })
    await later()
    // Balance less what the hold has left is what it was: B lets the account hold exactly the rest.
    await expect(plan(onB, sid(), 501)).rejects.toMatchObject({
      code: 'insufficient_credits',
      details: { availableMicro: cost(500) },
    })
    await expect(plan(onB, sid(), 500)).resolves.toMatchObject({ hops: [{ hostId }] })
  })

  it(
    'an instance that starts later counts a live instance’s holds once and leaves them while their session is ' +
      'charged',
    async () => {
      const grant = cost(1000, 4) + cost(500)
      const identity = await account(grant)
      const session = sid()
      const route = await plan(await connect(a, identity), session, 1000, 4)
      const c = await Tracker.start(common)
      try {
        const onC = await connect(c, identity)
        await vi.waitFor(() => expect(c.registry.get(hostId)?.online).toBe(true), { timeout: 10_000 })
        // The session is still in use ten minutes on: A settles its prefill then.
        const [paid] = await a.metering.settle(
          session,
          [prefill(route, session, 4, identity)],
          Date.now() + 10 * 60_000,
        )
        expect(paid).toMatchObject({ ok: true })
        await later()
        const refused = { code: 'insufficient_credits', details: { availableMicro: cost(500) } }
        await expect(plan(onC, sid(), 501)).rejects.toMatchObject(refused)
        // Sixteen minutes after the plan, six after the charge: the hold is not idle, C leaves it.
        await c.tickets.sweep(Date.now() + 16 * 60_000)
        await expect(plan(onC, sid(), 501)).rejects.toMatchObject(refused)
        const db = new pg.Client({ connectionString: common.dbPath })
        await db.connect()
        try {
          expect((await db.query('select session from credit_holds where session = $1', [session])).rows).toEqual([
            { session },
          ])
        } finally {
          await db.end()
        }
        await expect(plan(onC, sid(), 500)).resolves.toMatchObject({ hops: [{ hostId }] })
      } finally {
        await c.close()
      }
    },
  )
})
