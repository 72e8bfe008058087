// Paid twins (issue 34, item 4): a span served by two hosts is audited by the one the route did not pick, and that
// twin is paid to stand by: the route names it (the app shows it), and every step of the hop it stands by for gives it
// the standby fee, out of the route's price. A span with one host names nobody and pays nobody. A real tracker on
// loopback, three real hosts of stories260K, a real SQLite ledger.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import type { Host } from '../host/host'
import { NodeIdentity } from '../identity/keys'
import { feeOf, type RouteHop } from '../protocol'
import { escrowAccount, hostAccount } from '../tracker/ledger/account-names'
import { hopCharge, priceOf } from '../tracker/ledger/pricing'
import { DEFAULT_STANDBY_BPS } from '../tracker/ledger/standby'
import { STORIES_260K, scratchDir } from './models'
import { type InProcessSwarm, startSwarm } from './programs'

const TOKENS = 8

let scratch: { dir: string; cleanup: () => Promise<void> }
let swarm: InProcessSwarm
let front: Host[]
let back: Host

beforeAll(async () => {
  scratch = await scratchDir('neuron-standby-')
  // out of probation after one probe (twins must be eligible to audit), no scheduled probe during the test
  swarm = await startSwarm(scratch.dir, STORIES_260K, [], { checks: { probationProbes: 1, probeEveryMs: 3_600_000 } })
  front = [await swarm.addHost([0, 3]), await swarm.addHost([0, 3])]
  back = await swarm.addHost([3, 5])
  await vi.waitFor(
    () => {
      for (const h of [...front, back]) expect(swarm.tracker.checks.eligible(h.hostId)).toBe(true)
    },
    { timeout: 60_000, interval: 200 },
  )
}, 120_000)

afterAll(async () => {
  await swarm?.close()
  await scratch?.cleanup()
})

describe('paid twins', () => {
  it('the twin of a two-host span is named on the route and paid 5 % of every step of the hop it stands by for, ' +
    "out of that host's share; the sole host's hop names and pays nobody; the ledger sums to zero", async () => {
    const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    try {
      const { ledger } = swarm.tracker.store
      // a step's earnings wait in its host's escrow; a standby fee (and a session's rent) is paid to settled accounts
      const escrow = (h: Host) => ledger.balance(escrowAccount(h.hostId))
      const settled = (h: Host) => ledger.balance(hostAccount(h.hostId))
      const before = new Map(
        await Promise.all(
          [...front, back].map(
            async (h) => [h.hostId, { escrow: await escrow(h), settled: await settled(h) }] as const,
          ),
        ),
      )
      const hops: RouteHop[] = []
      const run = client.generate({
        modelId: swarm.manifest.modelId,
        prompt: [1, 403, 407, 290, 260, 151],
        maxTokens: TOKENS,
        stopAtEog: false,
        sampling: { temperature: 0 },
        onRoute: (route) => hops.push(...route),
      })
      let summary: { session: string } | undefined
      for (let next = await run.next(); ; next = await run.next())
        if (next.done) {
          summary = next.value
          break
        }
      const [first, last] = hops
      if (first === undefined || last === undefined) throw new Error(`expected a route of two hops, got ${hops.length}`)
      const served = front.find((h) => h.hostId === first.hostId)
      const twin = front.find((h) => h.hostId !== first.hostId)
      if (served === undefined || twin === undefined)
        throw new Error('the first hop is not one of the two [0, 3) hosts')
      // the route says who audits each hop and how many twins stand by: the app shows "1 twin on standby"
      expect(first).toMatchObject({ blocks: [0, 3], auditedBy: 'twins', standby: 1 })
      expect(last.blocks).toEqual([3, 5])
      expect(last.standby).toBeUndefined()
      expect(last.auditedBy).not.toBe('twins')

      // every receipt of the session settles (the client and the hosts hand them in), then the shares are exact
      const price = priceOf(swarm.manifest, {})
      const nLayer = swarm.manifest.nLayer
      const session = summary?.session ?? ''
      const receiptsOf = async (h: Host) =>
        (await ledger.receipts({ session, hostId: h.hostId })).map((s) => hopCharge(price, nLayer, s.receipt))
      await vi.waitFor(async () => expect(await receiptsOf(served)).toHaveLength(TOKENS), { timeout: 20_000 })
      await vi.waitFor(async () => expect(await receiptsOf(back)).toHaveLength(TOKENS), { timeout: 20_000 })
      const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0)
      const servedCharges = await receiptsOf(served)
      const shares = servedCharges.map((c) => Math.floor((c * DEFAULT_STANDBY_BPS) / 10_000))
      expect(sum(shares)).toBeGreaterThan(0)
      console.log(
        `standby: hop [0, 3) paid ${sum(servedCharges)} µ over ${TOKENS} steps, its twin ${sum(shares)} µ ` +
          `(${((100 * sum(shares)) / sum(servedCharges)).toFixed(1)} %)`,
      )
      expect((await settled(twin)) - (before.get(twin.hostId)?.settled ?? 0)).toBe(sum(shares))
      expect((await escrow(twin)) - (before.get(twin.hostId)?.escrow ?? 0)).toBe(0)
      expect((await escrow(served)) - (before.get(served.hostId)?.escrow ?? 0)).toBe(
        sum(servedCharges.map((c, i) => c - feeOf(c, 1000) - (shares[i] ?? 0))),
      )
      const backCharges = await receiptsOf(back)
      expect((await escrow(back)) - (before.get(back.hostId)?.escrow ?? 0)).toBe(
        sum(backCharges.map((c) => c - feeOf(c, 1000))),
      )
      expect(await ledger.total()).toBe(0)
    } finally {
      client.close()
    }
  }, 120_000)
})
