// A ban outlives a tracker restart and a save written from a record read before it (the async store reads a host's
// checks at its hello, so a passing audit asked while a banned host is away once saved a clean record over its ban).
import { describe, expect, it } from 'vitest'
import { storeEngines } from '../../test/store-engines'
import type { StoredChecks } from './checks-store'

const HOST = 'ab'.repeat(10)
const clean: StoredChecks = {
  hostId: HOST,
  probesPassed: 1,
  probesFailed: 0,
  auditsPassed: 0,
  auditsFailed: 0,
  banReason: null,
  bannedAt: null,
  measuredMsPerBlock: 5,
  lastProbeAt: 1,
}

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(`bans on ${engine.name}`, () => {
    engine.setUp()

    it(
      'a ban is never cleared by a later save from a clean record, and a restarted tracker lists it before the ' +
        'host says hello',
      async () => {
        const db = await engine.fresh()
        const store = await db.open()
        try {
          await store.checks.saveChecks({
            ...clean,
            probesFailed: 1,
            banReason: 'failed a known-answer probe',
            bannedAt: 1000,
          })
          // an audit's pass recorded on a record that never saw the ban
          await store.checks.saveChecks({ ...clean, auditsPassed: 1 })
          expect(await store.checks.checks(HOST)).toMatchObject({
            auditsPassed: 1,
            banReason: 'failed a known-answer probe',
            bannedAt: 1000,
          })
        } finally {
          await store.close()
        }
        const restarted = await db.open()
        try {
          expect((await restarted.checks.banned()).map((c) => [c.hostId, c.banReason])).toEqual([
            [HOST, 'failed a known-answer probe'],
          ])
        } finally {
          await restarted.close()
        }
      },
    )
  })
