// The tracker SIGKILLed while hosts hand in their own receipts, as real processes: after a restart on
// the same SQLite file or PostgreSQL database the hosts hand in what they kept, every step served is paid exactly once,
// and the books balance to zero.
import { randomBytes } from 'node:crypto'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../../client/swarm-client'
import { packModel } from '../../gguf/pack'
import { NodeIdentity } from '../../identity/keys'
import { STORIES_260K, scratchDir } from '../../test/models'
import { type NeuronProcess, startNeuron } from '../../test/processes'
import { storeEngines } from '../../test/store-engines'
import type { TrackerStore } from '../db/store'
import { consumerAccount, GRANTS_ACCOUNT } from './accounts'

const GRANT = 20_000_000
const processes: NeuronProcess[] = []
let cleanup: () => Promise<void> = async () => {}

function start(args: string[]): NeuronProcess {
  const p = startNeuron(args)
  processes.push(p)
  return p
}

/** A port free now: the restarted tracker takes the same one, so the hosts find it again. */
async function freePort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as { port: number }
  await new Promise((resolve) => server.close(resolve))
  return port
}

/** Receipts of `session` settled so far, read from the tracker's database as another process may. */
async function settledSteps(open: () => Promise<TrackerStore>, session: string): Promise<number> {
  const store = await open()
  try {
    return (await store.ledger.receipts({ session, limit: 10_000 })).length
  } finally {
    await store.close()
  }
}

/** Polls `read` until `done` holds (or `timeoutMs` passes: then the last value, for the assertions to judge). */
async function until(read: () => Promise<number>, done: (n: number) => boolean, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs
  let value = await read()
  while (!done(value) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100))
    value = await read()
  }
  return value
}

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(`host receipts across a tracker crash on ${engine.name}`, () => {
    engine.setUp()
    afterAll(async () => {
      await Promise.all(processes.map((p) => p.stop(2000)))
      await cleanup()
    })

    it('pays every step served exactly once when the tracker is SIGKILLed while hosts hand in receipts', async () => {
      const scratch = await scratchDir()
      cleanup = scratch.cleanup
      const { dir } = scratch
      const database = await engine.fresh()
      const db = database.location
      const port = await freePort()
      const tracker = () =>
        start([
          'tracker',
          '--port',
          String(port),
          '--db',
          db,
          '--key-file',
          join(dir, 'tracker-key.pem'),
          '--heartbeat-ms',
          '500',
          '--new-key-grant-micro',
          String(GRANT),
        ])
      const first = tracker()
      const url = (await first.waitFor(/tracker listening on (http:\/\/127\.0\.0\.1:\d+)/))[1] as string
      const manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed'), blocksPerArtifact: 2 })
      await start(['publish', join(dir, 'packed'), '--tracker', url, '--data-dir', join(dir, 'publisher')]).waitFor(
        /published stories260k/,
      )
      const hosts = ['0:3', '3:5'].map((blocks, i) =>
        start([
          'host',
          '--tracker',
          url,
          '--model',
          manifest.modelId,
          '--blocks',
          blocks,
          '--data-dir',
          join(dir, `host-${i}`),
          '--threads',
          '1',
        ]),
      )
      await Promise.all(hosts.map((h) => h.waitFor(/ ready blocks \[\d+, \d+\) ws:/, 90_000)))

      const identity = NodeIdentity.generate()
      const client = await SwarmClient.connect(url, identity)
      const session = randomBytes(16).toString('hex')
      const run = client.generate({
        modelId: manifest.modelId,
        prompt: 'Once upon a time',
        maxTokens: 60,
        session,
        stopAtEog: false,
      })
      let tokens = 0
      let settledBeforeKill = 0
      for (let next = await run.next(); !next.done; next = await run.next()) {
        // Mid-settlement: once the hosts' first receipts are settled
        // and more are coming. The data plane carries on without it.
        if (++tokens === 6) {
          settledBeforeKill = await until(
            () => settledSteps(database.open, session),
            (n) => n > 0,
            10_000,
          )
          first.child.kill('SIGKILL')
        }
      }
      client.close()
      expect(tokens).toBe(60)

      const second = tracker()
      await second.waitFor(/tracker listening on/)
      // The hosts join again and hand in what they kept; wait until every step's receipts are in.
      await until(
        () => settledSteps(database.open, session),
        (n) => n === 2 * tokens,
        90_000,
      )
      await second.stop()
      await Promise.all(hosts.map((h) => h.stop(2000)))

      const store = await database.open()
      try {
        const ledger = store.ledger
        const receipts = await ledger.receipts({ session, limit: 10_000 })
        // Nothing lost: each of the 60 steps paid on both hops; nothing doubled: once each.
        expect(receipts).toHaveLength(2 * tokens)
        expect(new Set(receipts.map((r) => `${r.receipt.step}:${r.receipt.blocks.join('-')}`)).size).toBe(2 * tokens)
        expect(await ledger.total()).toBe(0)
        expect(await ledger.unbalancedTransactions()).toEqual([])
        expect(await ledger.driftedBalances()).toEqual([])
        const account = await ledger.accountByPublicKey(identity.publicKey)
        if (account === undefined) throw new Error('the client got no account')
        expect(await ledger.balance(GRANTS_ACCOUNT)).toBe(-GRANT)
        const paid = GRANT - (await ledger.balance(consumerAccount(account.accountId)))
        expect(paid).toBe(receipts.reduce((s, r) => s + r.hostEarned, 0) + (await ledger.balance('swarm:fee')))
        expect(settledBeforeKill).toBeLessThan(2 * tokens)
        console.log(
          `SIGKILL with ${settledBeforeKill} receipts settled; after the restart ${receipts.length} for ${tokens} ` +
            `steps, ${paid} micro-credits paid`,
        )
      } finally {
        await store.close()
      }
    }, 300_000)
  })
