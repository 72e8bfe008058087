// An instance of a two-instance tracker killed mid-generation: tracker A runs as a real process
// (`neuron tracker --db postgres://… --redis …`), B in this process on the same database, Redis and
// key. Hosts and the client hold both URLs, A first. SIGKILL of A while the client is generating and
// the hosts are handing receipts in: the hosts join B, the client's tracker connection moves to B,
// the generation ends with llama.cpp's greedy tokens, and the ledger at B has every receipt once,
// balanced. Skipped, with the reason in the name, where PostgreSQL or Redis is not installed (CI
// installs both).
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { packModel } from '../gguf/pack'
import type { Host } from '../host/host'
import { publishModel } from '../host/publish'
import { NodeIdentity } from '../identity/keys'
import { oracleGreedy, oracleModel } from '../native/oracle'
import type { Manifest } from '../protocol'
import { STORIES_260K, scratchDir } from './models'
import { type PostgresCluster, postgresMissing, startPostgres } from './postgres'
import { type NeuronProcess, startNeuron } from './processes'
import { Host as HostClass, Tracker } from './programs'
import { type RedisServer, redisMissing, startRedis } from './redis'

const TOKENS = 32
const KILL_AT = 8
const missing = [await postgresMissing(), await redisMissing()].filter((m) => m !== undefined)
const SKIP = missing.length === 0 ? '' : ` (skipped: ${missing.join('; ')})`

describe.skipIf(missing.length > 0)(`a tracker instance killed mid-generation${SKIP}`, () => {
  let scratch: { dir: string; cleanup: () => Promise<void> }
  let pg: PostgresCluster
  let redis: RedisServer
  let a: NeuronProcess
  let aUrl = ''
  let b: Tracker
  let manifest: Manifest
  let publication: { close(): Promise<void> } | undefined
  const hosts: Host[] = []
  let prompt: number[] = []
  let oracle: number[] = []

  beforeAll(async () => {
    scratch = await scratchDir('neuron-failover-')
    ;[pg, redis] = await Promise.all([startPostgres(), startRedis()])
    const db = await pg.createDatabase()
    const keyPath = join(scratch.dir, 'tracker-key.pem')
    a = startNeuron([
      'tracker',
      '--port',
      '0',
      '--db',
      db,
      '--redis',
      redis.url,
      '--key-file',
      keyPath,
      '--heartbeat-ms',
      '500',
      '--new-key-grant-micro',
      '10000000',
    ])
    aUrl = (await a.waitFor(/tracker listening on (http:\/\/127\.0\.0\.1:\d+)/))[1] as string
    b = await Tracker.start({
      dbPath: db,
      redisUrl: redis.url,
      keyPath,
      heartbeatMs: 500,
      newKeyGrantMicro: 10_000_000,
    })
    manifest = await packModel({ source: STORIES_260K, out: join(scratch.dir, 'packed'), blocksPerArtifact: 1 })
    publication = await publishModel(
      join(scratch.dir, 'packed'),
      aUrl,
      NodeIdentity.generate(),
      join(scratch.dir, 'publisher'),
    )
    for (const [i, blocks] of [[0, 3] as const, [3, 5] as const].entries()) {
      const host = new HostClass({
        trackerUrl: `${aUrl},${b.url}`,
        dataDir: join(scratch.dir, `host-${i}`),
        modelId: manifest.modelId,
        blocks,
        threads: 1,
      })
      hosts.push(host)
      await host.start()
    }
    const llama = await oracleModel(STORIES_260K)
    prompt = [...llama.tokenize('Once upon a time', true)]
    oracle = (await oracleGreedy(llama, prompt, TOKENS, manifest.nVocab, { threads: 1 })).map((s) => s.token)
    await llama.dispose()
  }, 180_000)

  afterAll(async () => {
    for (const h of hosts) await h.stop(500)
    await publication?.close()
    await a?.stop()
    await b?.close()
    await Promise.all([pg?.stop(), redis?.stop()])
    await scratch?.cleanup()
  })

  it('the hosts join B, the generation ends with the same tokens, and the ledger has every receipt once, ' +
    'balanced', async () => {
    const ids = hosts.map((h) => h.hostId).sort()
    // Both hosts are A's: B only mirrors them.
    await vi.waitFor(
      () => expect(ids.map((id) => b.registry.get(id)?.owner ?? null).every((o) => o !== null)).toBe(true),
      { timeout: 10_000 },
    )
    const lines: string[] = []
    const client = await SwarmClient.connect(`${aUrl},${b.url}`, NodeIdentity.generate(), (l) => lines.push(l))
    try {
      const tokens: number[] = []
      const generation = client.generate({ modelId: manifest.modelId, prompt, maxTokens: TOKENS, stopAtEog: false })
      let next = await generation.next()
      while (!next.done) {
        tokens.push(next.value.token)
        if (tokens.length === KILL_AT) a.child.kill('SIGKILL')
        // Slower than the hosts: the rest of the generation, and the hosts' receipts, cross the failover.
        if (tokens.length >= KILL_AT) await new Promise((r) => setTimeout(r, 40))
        next = await generation.next()
      }
      const summary = next.value
      expect(tokens).toEqual(oracle)
      expect(a.child.signalCode).toBe('SIGKILL')
      // The hosts hold B now, as B's own.
      await vi.waitFor(
        () =>
          expect(ids.map((id) => b.registry.get(id)).every((h) => h?.online === true && h.owner === null)).toBe(true),
        { timeout: 20_000 },
      )
      // The client's receipts go to B, and the hosts' own (some sent to A before it died) once more: each is paid once.
      const verdicts = await client.submitReceipts(summary.session, summary.receipts)
      expect(verdicts.verdicts.filter((v) => !(v.ok || v.code === 'already_settled'))).toEqual([])
      const ledger = b.store.ledger
      await vi.waitFor(
        async () =>
          expect((await ledger.receipts({ session: summary.session, limit: 10_000 })).length).toBe(
            summary.receipts.length,
          ),
        {
          timeout: 20_000,
        },
      )
      const stored = await ledger.receipts({ session: summary.session, limit: 10_000 })
      const keys = stored.map((r) => `${r.receipt.hostId}:${r.receipt.step}:${r.receipt.blocks.join('-')}`)
      expect(new Set(keys).size).toBe(keys.length)
      expect(await ledger.total()).toBe(0)
      expect(await ledger.unbalancedTransactions()).toEqual([])
      expect(await ledger.driftedBalances()).toEqual([])
      expect(lines.some((l) => l.includes(`joined tracker instance ${b.url}`))).toBe(true)
    } finally {
      client.close()
    }
  }, 120_000)
})
