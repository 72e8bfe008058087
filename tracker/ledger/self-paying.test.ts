// Hosts hand in their own receipts: a client that takes the tokens and vanishes still pays for them.
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { SwarmClient } from '../../client/swarm-client'
import { NodeIdentity, nodeIdOf } from '../../identity/keys'
import type { Receipt } from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { startSwarm } from '../../test/programs'
import { escrowAccount, FEE_ACCOUNT, hostAccount } from './accounts'
import { hopCharge } from './pricing'

const GRANT = 10_000_000

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** What `receipts` cost at the model's prices: the prompt's tokens on step 1 (as its receipt says), one token after. */
function owedFor(receipts: readonly Receipt[], nLayer: number): number {
  const prompt = receipts.find((r) => r.step === 1)?.tokens ?? 0
  return receipts.reduce(
    (s, r) => s + hopCharge(r.price, nLayer, { step: r.step, blocks: r.blocks, tokens: r.step === 1 ? prompt : 1 }),
    0,
  )
}

describe(`receipts that pay by themselves`, () => {
  it(
    'a client that vanishes mid-generation is charged for the steps served, by the hosts’ receipts; its own ' +
      'copies later pay nothing twice',
    async () => {
      const { dir, cleanup } = await scratchDir()
      const swarm = await startSwarm(dir, STORIES_260K, [
        [0, 3],
        [3, 5],
      ])
      try {
        const identity = NodeIdentity.generate()
        const client = await SwarmClient.connect(swarm.tracker.url, identity)
        const session = randomBytes(16).toString('hex')
        const seen: Receipt[] = []
        const run = client.generate({
          modelId: swarm.manifest.modelId,
          prompt: 'Once upon a time',
          maxTokens: 30,
          session,
          onReceipts: (_, receipts) => {
            seen.push(...receipts)
          },
        })
        for (let i = 0; i < 5; i++) await run.next()
        // Gone: it hands in no receipt and closes nothing.
        client.close()
        expect(seen).toHaveLength(10)
        const ledger = swarm.tracker.store.ledger
        await until('the hosts’ receipts settled', async () => (await ledger.receipts({ session })).length === 10)
        const account = await swarm.tracker.accounts.byPublicKey(identity.publicKey)
        if (account === undefined) throw new Error('the client got no account')
        const owed = owedFor(seen, swarm.manifest.nLayer)
        expect(owed).toBeGreaterThan(0)
        expect(await swarm.tracker.accounts.balance(account.accountId)).toBe(GRANT - owed)

        const back = await SwarmClient.connect(swarm.tracker.url, identity)
        try {
          const { verdicts } = await back.submitReceipts(session, seen)
          expect(verdicts.map((v) => v.code)).toEqual(seen.map(() => 'already_settled'))
        } finally {
          back.close()
        }
        expect(await swarm.tracker.accounts.balance(account.accountId)).toBe(GRANT - owed)
        expect(await ledger.total()).toBe(0)
      } finally {
        await swarm.close()
        await cleanup()
      }
    },
  )

  it(
    'local use: a client chatting through its own host pays that host nothing (steps and rent), pays the other ' +
      'host as usual, and the host’s dashboard marks those receipts local',
    async () => {
      const { dir, cleanup } = await scratchDir()
      const swarm = await startSwarm(dir, STORIES_260K, [
        [0, 3],
        [3, 5],
      ])
      try {
        // The app's case: its chat and its host are one key pair.
        const own = await NodeIdentity.loadOrCreate(join(dir, 'host-1'))
        const [other, mine] = swarm.hosts.map((h) => h.hostId)
        expect(mine).toBe(nodeIdOf(own.publicKey))
        const client = await SwarmClient.connect(swarm.tracker.url, own)
        const session = randomBytes(16).toString('hex')
        const seen: Receipt[] = []
        try {
          const run = client.generate({
            modelId: swarm.manifest.modelId,
            prompt: 'Once upon a time',
            maxTokens: 6,
            session,
            onReceipts: (_, receipts) => {
              seen.push(...receipts)
            },
          })
          const tokens: unknown[] = []
          for await (const t of run) tokens.push(t)
          expect(tokens.length).toBeGreaterThan(0)
        } finally {
          client.close()
        }
        const ledger = swarm.tracker.store.ledger
        await until('the receipts settled', async () => (await ledger.receipts({ session })).length === seen.length)
        const account = await swarm.tracker.accounts.byPublicKey(own.publicKey)
        if (account === undefined) throw new Error('the client got no account')
        const owedToOther = owedFor(
          seen.filter((r) => r.hostId === other),
          swarm.manifest.nLayer,
        )
        owedFor(seen, swarm.manifest.nLayer) -
          owedFor(
            seen.filter((r) => r.hostId === mine),
            swarm.manifest.nLayer,
          )
        expect(seen.filter((r) => r.hostId === mine).length).toBeGreaterThan(0)
        expect(owedToOther).toBeGreaterThan(0)
        // Nothing reached the own host, rent included; every credit spent went to the other host or the swarm's fee.
        expect(await ledger.balance(hostAccount(mine as string))).toBe(0)
        expect(await ledger.balance(escrowAccount(mine as string))).toBe(0)
        const spent = GRANT - (await swarm.tracker.accounts.balance(account.accountId))
        expect(spent).toBeGreaterThanOrEqual(owedToOther)
        const otherGot =
          (await ledger.balance(hostAccount(other as string))) + (await ledger.balance(escrowAccount(other as string)))
        expect(spent).toBe(otherGot + (await ledger.balance(FEE_ACCOUNT)))

        const board = (await (await fetch(`${swarm.tracker.url}/v1/dashboard/hosts/${mine}`)).json()) as {
          recent_receipts: { receipt: { session: string }; local: boolean; accountId?: unknown }[]
        }
        // The tracker's own probes of the new host are other sessions, not local use.
        const ours = board.recent_receipts.filter((r) => r.receipt.session === session)
        expect(ours.length).toBeGreaterThan(0)
        expect(ours.map((r) => r.local)).not.toContain(false)
        // Whose account paid is not shown on a public dashboard.
        expect(board.recent_receipts.some((r) => 'accountId' in r)).toBe(false)
        expect(await ledger.total()).toBe(0)
      } finally {
        await swarm.close()
        await cleanup()
      }
    },
  )
})
