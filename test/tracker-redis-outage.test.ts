// Redis restarting under a tracker instance (`neuron tracker --db postgres://… --redis …`, a real
// process with a host on it): the instance keeps serving while Redis is away and joins the others again
// when it is back. Before, the Socket.IO adapter's unawaited publishes rejected after three reconnect
// tries and ended the process. Skipped, with the reason in the name, where PostgreSQL or Redis is not
// installed (CI installs both).
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { packModel } from '../gguf/pack'
import { publishModel } from '../host/publish'
import { NodeIdentity } from '../identity/keys'
import { STORIES_260K, scratchDir } from './models'
import { type PostgresCluster, postgresMissing, startPostgres } from './postgres'
import { type NeuronProcess, startNeuron } from './processes'
import { Host, Tracker } from './programs'
import { type RedisServer, redisMissing, startRedis } from './redis'

const missing = [await postgresMissing(), await redisMissing()].filter((m) => m !== undefined)
const SKIP = missing.length === 0 ? '' : ` (skipped: ${missing.join('; ')})`

describe.skipIf(missing.length > 0)(`a tracker instance while Redis restarts${SKIP}`, () => {
  let scratch: { dir: string; cleanup: () => Promise<void> }
  let pg: PostgresCluster
  let redis: RedisServer
  let a: NeuronProcess
  let b: Tracker | undefined
  let host: Host | undefined
  let publication: { close(): Promise<void> } | undefined

  beforeAll(async () => {
    scratch = await scratchDir('neuron-redis-outage-')
    ;[pg, redis] = await Promise.all([startPostgres(), startRedis()])
  }, 60_000)

  afterAll(async () => {
    await host?.stop(500)
    await publication?.close()
    await a?.stop()
    await b?.close()
    await Promise.all([pg?.stop(), redis?.stop()])
    await scratch?.cleanup()
  })

  it('keeps serving its host through the outage, and another instance started after it sees that host', async () => {
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
      '200',
    ])
    const aUrl = (await a.waitFor(/tracker listening on (http:\/\/127\.0\.0\.1:\d+)/))[1] as string
    const manifest = await packModel({ source: STORIES_260K, out: join(scratch.dir, 'packed'), blocksPerArtifact: 1 })
    publication = await publishModel(
      join(scratch.dir, 'packed'),
      aUrl,
      NodeIdentity.generate(),
      join(scratch.dir, 'publisher'),
    )
    host = new Host({
      trackerUrl: aUrl,
      dataDir: join(scratch.dir, 'host'),
      modelId: manifest.modelId,
      blocks: [0, 5],
      threads: 1,
    })
    await host.start()

    const port = Number(new URL(redis.url).port)
    await redis.stop()
    // Heartbeat batches go out every 200 ms and fail after ioredis's three reconnect tries (~300 ms).
    await a.waitFor(/Redis unreachable/)
    await new Promise((r) => setTimeout(r, 3_000))
    expect(a.child.exitCode).toBe(null)
    const health = (await (await fetch(`${aUrl}/health`)).json()) as { hosts: number }
    expect(health.hosts).toBe(1)

    redis = await startRedis(port)
    await a.waitFor(/Redis back after \d+ ms/)
    b = await Tracker.start({ dbPath: db, redisUrl: redis.url, keyPath, heartbeatMs: 200 })
    const hostId = host.hostId
    await vi.waitFor(() => expect(b?.registry.get(hostId)).toMatchObject({ online: true, owner: expect.any(String) }), {
      timeout: 10_000,
    })
    expect(a.child.exitCode).toBe(null)
  }, 120_000)
})
