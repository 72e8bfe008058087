// An idle conversation's cache costs its rent and is freed at expiry (issue 35): a real tracker and one host of
// stories260K on loopback. The host closes a stepped session idle past its idle timeout (shortened to 2 s here) and
// frees its cache; the tracker charges the session's rent when its credit hold idles out (15 minutes: the test runs
// the tracker's sweep as of 16 minutes on), once. The conversation's next turn then starts a new session and answers
// as a fresh one does.
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { Host } from '../host/host'
import { NodeIdentity } from '../identity/keys'
import { consumerAccount, FEE_ACCOUNT, hostAccount } from '../tracker/ledger/account-names'
import { HOLD_IDLE_MS } from '../tracker/ledger/credit-holds'
import { rentPerMinute } from '../tracker/ledger/rent'
import { drain } from './generations'
import { STORIES_260K, scratchDir } from './models'
import { type InProcessSwarm, startSwarm } from './programs'

const TOKENS = 10
const POSITIONS = 256
const IDLE_MS = 2_000

let scratch: { dir: string; cleanup: () => Promise<void> }
let swarm: InProcessSwarm
let host: Host

beforeAll(async () => {
  scratch = await scratchDir('neuron-idle-rent-')
  swarm = await startSwarm(scratch.dir, STORIES_260K, [])
  host = await swarm.addHost([0, 5], (o) => new Host({ ...o, idleSessionMs: IDLE_MS }))
}, 120_000)

afterAll(async () => {
  await swarm?.close()
  await scratch?.cleanup()
})

describe('an idle conversation', () => {
  it('is closed by its host at the idle timeout, its cache freed; its rent is charged once when its hold idles ' +
    'out; its next turn starts anew with a fresh session’s answer', async () => {
    const identity = NodeIdentity.generate()
    const client = await SwarmClient.connect(swarm.tracker.url, identity)
    try {
      const modelId = swarm.manifest.modelId
      const tokenizer = await client.tokenizer(modelId)
      const conversation = client.conversation({ positions: POSITIONS })
      const first = tokenizer.encode('Once upon a time, there was a little girl')
      const one = await drain(conversation.turn({ modelId, prompt: first, maxTokens: TOKENS, stopAtEog: false }))
      // the conversation keeps its session between turns: the host holds its cache
      expect(host.activeSessions).toBe(1)
      await vi.waitFor(() => expect(host.activeSessions).toBe(0), { timeout: 30_000, interval: 100 })

      const account = await swarm.tracker.accounts.byPublicKey(identity.publicKey)
      if (account === undefined) throw new Error('the client has no account')
      const { ledger } = swarm.tracker.store
      const balances = async () => ({
        consumer: await ledger.balance(consumerAccount(account.accountId)),
        host: await ledger.balance(hostAccount(host.hostId)),
        fee: await ledger.balance(FEE_ACCOUNT),
      })
      const before = await balances()
      // as of 16 minutes on: the hold has been idle past HOLD_IDLE_MS, and its rent runs to its last activity (this
      // minute: the first started)
      await swarm.tracker.tickets.sweep(Date.now() + HOLD_IDLE_MS + 60_000)
      const after = await balances()
      const rent = rentPerMinute(swarm.manifest, [0, 5], POSITIONS, {})
      expect(rent).toBeGreaterThan(0)
      expect(before.consumer - after.consumer).toBe(rent)
      expect(after.host - before.host + (after.fee - before.fee)).toBe(rent)
      expect(after.host).toBeGreaterThan(before.host)
      // charged once: another sweep finds no hold
      await swarm.tracker.tickets.sweep(Date.now() + HOLD_IDLE_MS + 120_000)
      expect(await balances()).toEqual(after)

      // the next turn: the session is gone on both sides, so it starts anew, and answers as a new session does
      const second = [...first, ...one.tokens, ...tokenizer.encode(' She liked to play').slice(first[0] === 1 ? 1 : 0)]
      const two = await drain(conversation.turn({ modelId, prompt: second, maxTokens: TOKENS, stopAtEog: false }))
      expect(two.summary.session).not.toBe(one.summary.session)
      expect(two.summary.cachedTokens).toBe(0)
      const fresh = await drain(
        client.generate({ modelId, prompt: second, maxTokens: TOKENS, stopAtEog: false, sampling: { temperature: 0 } }),
      )
      expect(two.tokens).toEqual(fresh.tokens)
      await conversation.close()
    } finally {
      client.close()
    }
  }, 120_000)
})
