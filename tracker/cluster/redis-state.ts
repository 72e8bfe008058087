// What several tracker instances must share at once, in Redis: login nonces (each spent once, at any
// instance) and the gateway's rate-limit windows (an account counted once across instances).
import type { Redis } from 'ioredis'
import { NeuronError } from '../../protocol'
import { MAX_OPEN_CHALLENGES, type NonceBook } from '../access/auth'
import type { WindowCounter } from '../gateway/rate-limit'

const PREFIX = 'neuron:'

/**
 * Open nonces as Redis keys that expire with them; taking one deletes it atomically (GETDEL), so two
 * instances cannot both accept it. Anyone may ask for a nonce without logging in, so the swarm issues at
 * most `maxOpen` per minute (a counter per minute, every instance together): past it a challenge is
 * refused (503, retry shortly) rather than Redis's memory growing with the asking rate.
 */
export class RedisNonces implements NonceBook {
  constructor(
    private readonly redis: Redis,
    private readonly maxOpen = MAX_OPEN_CHALLENGES,
  ) {}

  async put(nonce: string, expiresAt: number, now: number): Promise<void> {
    const minute = `${PREFIX}nonces-issued:${Math.floor(now / 60_000)}`
    const results = await this.redis.multi().incr(minute).pexpire(minute, 120_000).exec()
    const issued = Number(results?.[0]?.[1] ?? 0)
    if (issued > this.maxOpen)
      throw new NeuronError(
        'busy',
        `the swarm has issued ${this.maxOpen} login challenges this minute; retry in ` +
          `${60 - Math.floor((now % 60_000) / 1000)} s.`,
      )
    await this.redis.set(`${PREFIX}nonce:${nonce}`, String(expiresAt), 'PX', Math.max(1, expiresAt - now))
  }

  async take(nonce: string): Promise<number | undefined> {
    const value = await this.redis.getdel(`${PREFIX}nonce:${nonce}`)
    return value === null ? undefined : Number(value)
  }
}

/** Fixed windows aligned to the clock: one Redis counter per key and window, gone a window after it ends. */
export class RedisCounter implements WindowCounter {
  constructor(private readonly redis: Redis) {}

  async hit(key: string, windowMs: number, now: number): Promise<{ count: number; endsAt: number }> {
    const start = now - (now % windowMs)
    const name = `${PREFIX}${key}:${start}`
    const results = await this.redis
      .multi()
      .incr(name)
      .pexpire(name, 2 * windowMs)
      .exec()
    const count = Number(results?.[0]?.[1] ?? 0)
    return { count, endsAt: start + windowMs }
  }
}
