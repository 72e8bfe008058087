// Two tracker instances serving one swarm, on a throwaway PostgreSQL cluster and Redis server: hosts
// join instance A; a client on instance B chats with llama.cpp's greedy tokens; B's gateway meters a
// request once; B's dashboards see A's hosts and get pushes for their receipts; a login nonce is spent
// once across both, and so is a new-key grant's challenge. Skipped, with the reason in the name, where PostgreSQL or
// Redis is not installed (CI installs both).
import { join } from 'node:path'
import OpenAI from 'openai'
import nodePostgres from 'pg'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { connectTracker, fetchChallenge } from '../dataplane/tracker-connection'
import { solveGrantWork } from '../identity/grant-work'
import { NodeIdentity } from '../identity/keys'
import { oracleGreedy, oracleModel } from '../native/oracle'
import { ClientToTracker, callRpc, DashboardReceipt, type RouteHop } from '../protocol'
import { MAX_CROSS_INSTANCE_BYTES } from '../tracker/cluster/cluster'
import { consumerAccount, escrowAccount } from '../tracker/ledger/accounts'
import { hopCharge, priceOf } from '../tracker/ledger/pricing'
import { STORIES_260K, scratchDir } from './models'
import { type PostgresCluster, postgresMissing, startPostgres } from './postgres'
import { createAccount, Host, type InProcessSwarm, startSwarm, Tracker } from './programs'
import { type RedisServer, redisMissing, startRedis } from './redis'

const ADMIN = 'cluster-admin-token'
const TOKENS = 24
const missing = [await postgresMissing(), await redisMissing()].filter((m) => m !== undefined)
const SKIP = missing.length === 0 ? '' : ` (skipped: ${missing.join('; ')})`

describe.skipIf(missing.length > 0)(`two tracker instances on PostgreSQL and Redis${SKIP}`, () => {
  let scratch: { dir: string; cleanup: () => Promise<void> }
  let pg: PostgresCluster
  let redis: RedisServer
  let swarm: InProcessSwarm
  let b: Tracker
  let prompt: number[] = []
  let oracle: number[] = []
  let dbPath = ''

  beforeAll(async () => {
    scratch = await scratchDir('neuron-cluster-')
    ;[pg, redis] = await Promise.all([startPostgres(), startRedis()])
    dbPath = await pg.createDatabase()
    const common = {
      dbPath,
      redisUrl: redis.url,
      keyPath: join(scratch.dir, 'tracker-key.pem'),
      gateway: { adminToken: ADMIN },
    }
    // Instance A, with the model published and two hosts on it, the second reachable only through A's
    // relay; then B, which learns of them from A.
    swarm = await startSwarm(scratch.dir, STORIES_260K, [[0, 3]], common)
    await swarm.addHost([3, 5], (options) => new Host({ ...options, relay: true }))
    b = await Tracker.start({ ...common, heartbeatMs: 500, newKeyGrantMicro: 10_000_000 })
    const llama = await oracleModel(STORIES_260K)
    prompt = [...llama.tokenize('Once upon a time', true)]
    oracle = (await oracleGreedy(llama, prompt, TOKENS, swarm.manifest.nVocab, { threads: 1 })).map((s) => s.token)
    await llama.dispose()
  }, 180_000)

  /** What the stored receipts say the account was charged, summed in the database itself. */
  async function storedCharges(accountId: string): Promise<number> {
    const db = new nodePostgres.Client({ connectionString: dbPath })
    await db.connect()
    try {
      return Number(
        (await db.query('select coalesce(sum(charged), 0) as total from receipts where account_id = $1', [accountId]))
          .rows[0]?.total,
      )
    } finally {
      await db.end()
    }
  }

  afterAll(async () => {
    await b?.close()
    await swarm?.close()
    await Promise.all([pg?.stop(), redis?.stop()])
    await scratch?.cleanup()
  })

  it(
    'B lists the hosts and the model that joined A, and routes a client through them (one by A’s relay) with ' +
      'llama.cpp’s greedy tokens',
    async () => {
      const hostIds = swarm.hosts.map((h) => h.hostId).sort()
      await vi.waitFor(
        () =>
          expect(
            b.registry
              .summaries()
              .filter((h) => h.online && h.state.status === 'ready')
              .map((h) => h.hostId)
              .sort(),
          ).toEqual(hostIds),
        {
          timeout: 10_000,
        },
      )
      expect(b.catalog.has(swarm.manifest.modelId)).toBe(true)
      const client = await SwarmClient.connect(b.url, NodeIdentity.generate())
      try {
        const hosts = await callRpc(client.tracker, ClientToTracker, 'hosts.list', {})
        expect(
          hosts.hosts
            .filter((h) => h.online)
            .map((h) => h.hostId)
            .sort(),
        ).toEqual(hostIds)
        const tokens: number[] = []
        let route: readonly RouteHop[] = []
        for await (const t of client.generate({
          modelId: swarm.manifest.modelId,
          prompt,
          maxTokens: TOKENS,
          stopAtEog: false,
          onRoute: (r) => (route = r),
        }))
          tokens.push(t.token)
        const hops = route.map((h) => h.hostId)
        expect(tokens).toEqual(oracle)
        expect(hops.sort()).toEqual(hostIds)
        expect(route.filter((h) => h.endpoint === null).length).toBe(1)
      } finally {
        client.close()
      }
    },
  )

  it(
    'refuses a frame too large to cross Redis to A’s ' + 'relayed host, with a typed error, and relays the next',
    async () => {
      const relayed = swarm.hosts[1]
      if (relayed === undefined) throw new Error('no relayed host')
      const client = await connectTracker(b.url, '/clients', NodeIdentity.generate())
      try {
        // Redis drops a subscriber past 32 MiB of output: such a frame would cut every instance off.
        const big = new Uint8Array(MAX_CROSS_INSTANCE_BYTES + 1)
        await expect(
          callRpc(client, ClientToTracker, 'relay.forward', { hostId: relayed.hostId, frame: big }),
        ).rejects.toMatchObject({
          code: 'frame_too_large',
          message: expect.stringMatching(/smaller chunks/),
        })
      } finally {
        client.close()
      }
      // The instances are still joined: a chat through A's relayed host from B works.
      const chat = await SwarmClient.connect(b.url, NodeIdentity.generate())
      try {
        const tokens: number[] = []
        for await (const t of chat.generate({
          modelId: swarm.manifest.modelId,
          prompt,
          maxTokens: 4,
          stopAtEog: false,
        }))
          tokens.push(t.token)
        expect(tokens).toEqual(oracle.slice(0, 4))
      } finally {
        chat.close()
      }
    },
  )

  it('meters a gateway request on B once, and B’s dashboard gets the pushes for A’s host', async () => {
    const host = swarm.hosts[0]
    if (host === undefined) throw new Error('no host')
    const { accountId, apiKey } = await createAccount(b.url, ADMIN, { grant_micro: 5_000_000 })
    const dashboard = await connectTracker(b.url, '/clients', NodeIdentity.generate())
    try {
      const pushes: DashboardReceipt[] = []
      dashboard.on('dashboard.receipt', (p: unknown) => pushes.push(DashboardReceipt.parse(p)))
      await callRpc(dashboard, ClientToTracker, 'dashboard.subscribe', { hostIds: [host.hostId] })
      const openai = new OpenAI({ baseURL: `${b.url}/v1`, apiKey, maxRetries: 0 })
      const completion = await openai.completions.create({
        model: swarm.manifest.modelId,
        prompt: 'Once upon a time',
        max_tokens: 8,
        temperature: 0,
      })
      expect(completion.usage?.completion_tokens).toBe(8)
      const ledger = swarm.tracker.store.ledger
      // The hosts hand their receipts in at A, the gateway at B: each step is paid once.
      await vi.waitFor(
        async () => expect(pushes.at(-1)?.hostPendingMicro).toBe(await ledger.balance(escrowAccount(host.hostId))),
        { timeout: 10_000 },
      )
      const paid = (await ledger.receipts({ limit: 100_000 })).filter((r) => r.accountId === accountId)
      expect(new Set(paid.map((r) => r.receipt.hostId)).size).toBe(2)
      const debit = 5_000_000 - (await ledger.balance(consumerAccount(accountId)))
      // Once, not twice: each of the 8 steps paid by each hop at the step's
      // price (step 1 the prompt and a token, every later step a token).
      const price = priceOf(swarm.manifest, {})
      const prompt = completion.usage?.prompt_tokens ?? 0
      const hops = [[0, 3] as const, [3, 5] as const]
      const steps = Array.from({ length: 8 }, (_, i) => i + 1)
      const expected = steps.reduce(
        (sum, step) =>
          sum +
          hops.reduce(
            (s, blocks) =>
              s + hopCharge(price, swarm.manifest.nLayer, { step, blocks, tokens: step === 1 ? prompt : 1 }),
            0,
          ),
        0,
      )
      expect(debit).toBe(expected)
      expect(debit).toBe(await storedCharges(accountId))
      expect(await ledger.total()).toBe(0)
      expect(await ledger.unbalancedTransactions()).toEqual([])
      expect(pushes.some((p) => p.hostId === host.hostId && p.ok && p.chargedMicro > 0)).toBe(true)
    } finally {
      dashboard.close()
    }
    const board = await fetch(`${b.url}/v1/dashboard/hosts/${host.hostId}`)
    expect(board.status).toBe(200)
    expect(((await board.json()) as { served_block_tokens: number }).served_block_tokens).toBeGreaterThan(0)
  })

  it(
    'spends a login nonce once across the instances: fetched ' + 'from A, accepted by B, refused when used again at A',
    async () => {
      const identity = NodeIdentity.generate()
      const challenge = await fetchChallenge(swarm.tracker.url)
      const auth = identity.answer('/clients', challenge)
      const { io } = await import('socket.io-client')
      const connect = (url: string) =>
        new Promise<string>((resolve) => {
          const socket = io(`${url}/clients`, { auth, transports: ['websocket'], reconnection: false, forceNew: true })
          socket.once('connect', () => {
            socket.close()
            resolve('connected')
          })
          socket.once('connect_error', (e: Error & { data?: { code?: string } }) => {
            socket.close()
            resolve(e.data?.code ?? e.message)
          })
        })
      expect(await connect(b.url)).toBe('connected')
      expect(await connect(swarm.tracker.url)).toBe('unauthenticated')
    },
  )

  it(
    'spends a grant challenge once across the instances: issued by A, claimed at B, refused when claimed ' +
      'again at A',
    async () => {
      const identity = NodeIdentity.generate()
      const [onA, onB] = await Promise.all([
        connectTracker(swarm.tracker.url, '/clients', identity),
        connectTracker(b.url, '/clients', identity),
      ])
      try {
        const { challenge, bits } = await callRpc(onA, ClientToTracker, 'grant.challenge', {})
        const { nonce } = await solveGrantWork(challenge, identity.publicKey, bits)
        const { accountId, grantMicro } = await callRpc(onB, ClientToTracker, 'grant.claim', { challenge, nonce })
        expect(await swarm.tracker.accounts.balance(accountId)).toBe(grantMicro)
        await expect(callRpc(onA, ClientToTracker, 'grant.claim', { challenge, nonce })).rejects.toMatchObject({
          code: 'grant_challenge_used',
        })
      } finally {
        onA.close()
        onB.close()
      }
    },
  )
})
