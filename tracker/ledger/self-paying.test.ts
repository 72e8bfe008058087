// Hosts hand in their own receipts: a client that takes the tokens and vanishes still pays for them.
import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { SwarmClient } from '../../client/swarm-client'
import { NodeIdentity } from '../../identity/keys'
import type { Receipt } from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { startSwarm } from '../../test/programs'
import { hopCharge } from './pricing'

const GRANT = 10_000_000

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
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
        const prompt = seen.find((r) => r.step === 1)?.tokens ?? 0
        const owed = seen.reduce(
          (s, r) =>
            s +
            hopCharge(r.price, swarm.manifest.nLayer, {
              step: r.step,
              blocks: r.blocks,
              tokens: r.step === 1 ? prompt : 1,
            }),
          0,
        )
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
})
