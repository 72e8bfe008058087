// Against a throwaway redis-server (test/redis.ts); skipped, with the
// reason in the name, where it is not installed (CI installs it).
import { Redis } from 'ioredis'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type RedisServer, redisMissing, startRedis } from '../../test/redis'
import { ChallengeIssuer } from '../access/auth'
import { RedisNonces } from './redis-state'

const missing = await redisMissing()

describe.skipIf(missing !== undefined)(
  `login nonces in Redis${missing === undefined ? '' : ` (skipped: ${missing})`}`,
  () => {
    let server: RedisServer
    let redis: Redis
    beforeAll(async () => {
      server = await startRedis()
      redis = new Redis(server.url)
    })
    afterAll(async () => {
      await redis?.quit()
      await server?.stop()
    })

    it(
      'an anonymous flood of challenge requests is refused past the swarm’s cap, and Redis keeps only that many ' +
        'nonces',
      async () => {
        const issuer = new ChallengeIssuer('tracker-key', new RedisNonces(redis, 50))
        const now = 60_000 * 1000 + 5_000
        const results = await Promise.allSettled(Array.from({ length: 80 }, () => issuer.issue(now)))
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(50)
        const refused = results.find((r) => r.status === 'rejected')
        expect(refused?.status === 'rejected' && refused.reason).toMatchObject({
          code: 'busy',
          message: expect.stringMatching(/retry in \d+ s/),
        })
        expect(await redis.keys('neuron:nonce:*')).toHaveLength(50)
        // A nonce issued before the cap is still good, once.
        const first = results.find((r) => r.status === 'fulfilled')
        const nonce = first?.status === 'fulfilled' ? first.value.nonce : ''
        const book = new RedisNonces(redis, 50)
        expect(await book.take(nonce)).toBeGreaterThan(0)
        expect(await book.take(nonce)).toBeUndefined()
      },
    )
  },
)
