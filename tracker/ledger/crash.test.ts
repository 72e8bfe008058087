// The tracker SIGKILLed mid-stream, as real processes, on a SQLite file and on PostgreSQL: every ledger
// entry committed before the kill survives the restart, nothing is counted twice, and the books still balance.
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { packModel } from '../../gguf/pack'
import { REPLAY_STEP_BASE } from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { type NeuronProcess, startNeuron } from '../../test/processes'
import { createAccount } from '../../test/programs'
import { storeEngines } from '../../test/store-engines'
import { consumerAccount, escrowAccount, FEE_ACCOUNT, GRANTS_ACCOUNT, hostAccount } from './accounts'

const ADMIN = 'crash-test-admin'
const GRANT = 50_000_000
const processes: NeuronProcess[] = []
let cleanup: () => Promise<void> = async () => {}

function start(args: string[]): NeuronProcess {
  const p = startNeuron(args, { NEURON_ADMIN_TOKEN: ADMIN })
  processes.push(p)
  return p
}

async function startTracker(db: string, keyFile: string): Promise<{ process: NeuronProcess; url: string }> {
  const process = start(['tracker', '--port', '0', '--db', db, '--key-file', keyFile, '--heartbeat-ms', '500'])
  const url = (await process.waitFor(/tracker listening on (http:\/\/127\.0\.0\.1:\d+)/))[1] as string
  return { process, url }
}

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(`ledger across a tracker crash on ${engine.name}`, () => {
    engine.setUp()
    afterAll(async () => {
      await Promise.all(processes.map((p) => p.stop(2000)))
      await cleanup()
    })

    it('loses no committed entry and counts none twice when the tracker is SIGKILLed mid-stream', async () => {
      const scratch = await scratchDir()
      cleanup = scratch.cleanup
      const dir = scratch.dir
      const database = await engine.fresh()
      const db = database.location
      const keyFile = join(dir, 'tracker-key.pem')
      const manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed'), blocksPerArtifact: 2 })
      const first = await startTracker(db, keyFile)
      start(['publish', join(dir, 'packed'), '--tracker', first.url, '--data-dir', join(dir, 'publisher')])
      await processes.at(-1)?.waitFor(/published stories260k/)
      const ranges = ['0:2', '2:4', '4:5']
      const hosts = ranges.map((layers, i) =>
        start([
          'host',
          '--tracker',
          first.url,
          '--model',
          manifest.modelId,
          '--blocks',
          layers,
          '--data-dir',
          join(dir, `host-${i}`),
          '--threads',
          '1',
        ]),
      )
      await Promise.all(hosts.map((h) => h.waitFor(/ ready blocks \[\d+, \d+\) ws:/, 90_000)))
      const { accountId, apiKey } = await createAccount(first.url, ADMIN, { grant_micro: GRANT })

      const res = await fetch(`${first.url}/v1/completions`, {
        method: 'POST',
        headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          model: manifest.modelId,
          prompt: 'Once upon a time',
          max_tokens: 400,
          temperature: 1,
          seed: 11,
          stream: true,
        }),
      })
      expect(res.status).toBe(200)
      const reader = (res.body as ReadableStream<Uint8Array>).getReader()
      let sse = ''
      let chunks = 0
      while (chunks < 6) {
        const { value, done } = await reader.read()
        if (done) break
        sse += new TextDecoder().decode(value)
        chunks = (sse.match(/"text":"[^"]/g) ?? []).length
      }
      // Every chunk the caller holds was settled before it was written: those entries must survive.
      first.process.child.kill('SIGKILL')
      await reader.read().catch(() => undefined)
      expect(sse).not.toContain('[DONE]')
      expect(chunks).toBeGreaterThanOrEqual(6)

      // The restarted tracker opens the same file, migrates nothing twice and reports the same balance.
      const second = await startTracker(db, keyFile)
      const dashboard = (await (
        await fetch(`${second.url}/v1/dashboard/account`, { headers: { authorization: `Bearer ${apiKey}` } })
      ).json()) as {
        balance_micro: number
      }
      await second.process.stop()
      await Promise.all(hosts.map((h) => h.stop(2000)))

      const store = await database.open()
      try {
        const ledger = store.ledger
        expect(await ledger.total()).toBe(0)
        expect(await ledger.unbalancedTransactions()).toEqual([])
        expect(await ledger.driftedBalances()).toEqual([])
        const receipts = (await ledger.receipts({ limit: 100_000 })).filter((r) => r.accountId === accountId)
        const sessions = new Set(receipts.map((r) => r.receipt.session))
        expect(sessions.size).toBe(1)
        const blocksPerStep = new Map<number, number>()
        for (const { receipt } of receipts) {
          expect(receipt.step).toBeLessThan(REPLAY_STEP_BASE)
          blocksPerStep.set(
            receipt.step,
            (blocksPerStep.get(receipt.step) ?? 0) + receipt.blocks[1] - receipt.blocks[0],
          )
        }
        // No block of any step paid twice; every step whose token reached the caller fully paid.
        expect([...blocksPerStep.values()].every((n) => n <= manifest.nLayer)).toBe(true)
        const complete = [...blocksPerStep.values()].filter((n) => n === manifest.nLayer).length
        expect(complete).toBeGreaterThanOrEqual(chunks)
        const charged = receipts.reduce((s, r) => s + r.hostEarned, 0)
        const hosts = [...new Set(receipts.map((r) => r.receipt.hostId))]
        // Earnings wait in the hosts' escrow for the settlement
        // window (a day by default): all pending, none settled yet.
        const sum = async (accounts: string[]) =>
          (await Promise.all(accounts.map((a) => ledger.balance(a)))).reduce((s, b) => s + b, 0)
        expect(await sum(hosts.map(escrowAccount))).toBe(charged)
        expect(await sum(hosts.map(hostAccount))).toBe(0)
        expect(await ledger.balance(consumerAccount(accountId))).toBe(
          GRANT - charged - (await ledger.balance(FEE_ACCOUNT)),
        )
        expect(await ledger.balance(GRANTS_ACCOUNT)).toBe(-GRANT)
        expect(dashboard.balance_micro).toBe(await ledger.balance(consumerAccount(accountId)))
        console.log(
          `after SIGKILL: ${chunks} chunks streamed, ${complete} steps fully paid, ${receipts.length} receipts, ` +
            `${charged} micro-credits to hosts`,
        )
      } finally {
        await store.close()
      }
    }, 240_000)
  })
