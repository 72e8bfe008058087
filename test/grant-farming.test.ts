// Grants that cost something, against a real tracker and one real host of stories260K. The attack as measured before
// the fix: one address looping fresh keys through route.plan took a grant for each, 30 a minute (43 200 a day), for
// nothing. Now a grant takes a proof of work on a single-use challenge, and one network prefix takes at most
// PER_PREFIX a day; a key without a proof gets no account (grant_unclaimed) and can still connect.
import { randomBytes } from 'node:crypto'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { claimGrant } from '../client/grant-claim'
import { SwarmClient } from '../client/swarm-client'
import { connectTracker } from '../dataplane/tracker-connection'
import { hasGrantWork, solveGrantWork } from '../identity/grant-work'
import { NodeIdentity } from '../identity/keys'
import { ClientToTracker, callRpc } from '../protocol'
import { GRANTS_ACCOUNT } from '../tracker/ledger/accounts'
import { STORIES_260K, scratchDir } from './models'
import { type InProcessSwarm, startSwarm } from './programs'

const PER_PREFIX = 5
const FRESH_KEYS = 50
const GRANT = 2_000_000
// Low, so the test is quick: what it checks is that the work is asked and checked, not how long it takes.
const BITS = 10
const sid = () => randomBytes(16).toString('hex')

describe(`new-key grants that cost work and are bounded per network prefix`, () => {
  let swarm: InProcessSwarm
  let cleanup: () => Promise<void> = async () => {}
  const sockets: { close(): void }[] = []
  const connect = async (identity = NodeIdentity.generate()) => {
    const socket = await connectTracker(swarm.tracker.url, '/clients', identity)
    sockets.push(socket)
    return socket
  }
  const granted = async (identity: NodeIdentity) => {
    const account = await swarm.tracker.accounts.byPublicKey(identity.publicKey)
    return account === undefined ? 0 : swarm.tracker.accounts.balance(account.accountId)
  }

  beforeAll(async () => {
    const scratch = await scratchDir('neuron-grant-farming-')
    swarm = await startSwarm(scratch.dir, STORIES_260K, [[0, 5]], {
      newKeyGrantMicro: GRANT,
      grantWorkBits: BITS,
      grantsPerPrefixPerDay: PER_PREFIX,
      newAccountsPerMinute: 1000,
    })
    cleanup = async () => {
      for (const s of sockets) s.close()
      await swarm.close()
      await scratch.cleanup()
    }
  }, 180_000)
  afterAll(() => cleanup())

  it('the honest client does the work by itself on its first chat and is granted once', async () => {
    const identity = NodeIdentity.generate()
    const client = await SwarmClient.connect(swarm.tracker.url, identity)
    try {
      for (let chat = 0; chat < 2; chat++) {
        let tokens = 0
        for await (const _ of client.generate({
          modelId: swarm.manifest.modelId,
          prompt: 'Once upon a time',
          maxTokens: 3,
          stopAtEog: false,
        }))
          tokens++
        expect(tokens).toBe(3)
      }
    } finally {
      client.close()
    }
    const account = await swarm.tracker.accounts.byPublicKey(identity.publicKey)
    expect(account).toBeDefined()
    // Two chats, one grant: the swarm has issued GRANT credits in all.
    expect(await swarm.tracker.store.ledger.balance(GRANTS_ACCOUNT)).toBe(-GRANT)
  })

  it(
    'a key without a proof gets no grant, garbage and reused ' + 'proofs are refused, and it can still use the tracker',
    async () => {
      const identity = NodeIdentity.generate()
      const socket = await connect(identity)
      const plan = () =>
        callRpc(socket, ClientToTracker, 'route.plan', {
          modelId: swarm.manifest.modelId,
          maxTokens: 8,
          session: sid(),
        })
      await expect(plan()).rejects.toMatchObject({
        code: 'grant_unclaimed',
        message: expect.stringMatching(/grant\.challenge/),
      })
      expect((await callRpc(socket, ClientToTracker, 'models.list', {})).models.map((m) => m.modelId)).toContain(
        swarm.manifest.modelId,
      )

      const challenge = await callRpc(socket, ClientToTracker, 'grant.challenge', {})
      expect(challenge).toMatchObject({ bits: BITS, grantMicro: GRANT })
      let garbage = 0
      while (hasGrantWork(challenge.challenge, identity.publicKey, String(garbage), BITS)) garbage++
      await expect(
        callRpc(socket, ClientToTracker, 'grant.claim', { challenge: challenge.challenge, nonce: String(garbage) }),
      ).rejects.toMatchObject({
        code: 'grant_proof_invalid',
      })
      // A refused proof spends its challenge: a right answer to it afterwards is refused too.
      const { nonce } = await solveGrantWork(challenge.challenge, identity.publicKey, BITS)
      await expect(
        callRpc(socket, ClientToTracker, 'grant.claim', { challenge: challenge.challenge, nonce }),
      ).rejects.toMatchObject({
        code: 'grant_challenge_used',
      })
      // A challenge the tracker never issued, and one past its expiry.
      const forged = `grant.${Date.now() + 60_000}.${randomBytes(16).toString('base64url')}`
      await expect(
        callRpc(socket, ClientToTracker, 'grant.claim', { challenge: forged, nonce: '0' }),
      ).rejects.toMatchObject({ code: 'grant_challenge_used' })
      const expired = `grant.${Date.now() - 1}.${randomBytes(16).toString('base64url')}`
      await expect(
        callRpc(socket, ClientToTracker, 'grant.claim', { challenge: expired, nonce: '0' }),
      ).rejects.toMatchObject({
        code: 'grant_challenge_expired',
      })
      expect(await granted(identity)).toBe(0)

      // Proof made for another key does not open this one's account.
      const other = NodeIdentity.generate()
      const fresh = await callRpc(socket, ClientToTracker, 'grant.challenge', {})
      const forOther = await solveGrantWork(fresh.challenge, other.publicKey, BITS)
      if (!hasGrantWork(fresh.challenge, identity.publicKey, forOther.nonce, BITS))
        await expect(
          callRpc(socket, ClientToTracker, 'grant.claim', { challenge: fresh.challenge, nonce: forOther.nonce }),
        ).rejects.toMatchObject({
          code: 'grant_proof_invalid',
        })

      // The honest path: one proof, one grant; the same challenge answered again is spent.
      const good = await callRpc(socket, ClientToTracker, 'grant.challenge', {})
      const answer = await solveGrantWork(good.challenge, identity.publicKey, BITS)
      expect(
        await callRpc(socket, ClientToTracker, 'grant.claim', { challenge: good.challenge, nonce: answer.nonce }),
      ).toMatchObject({ grantMicro: GRANT })
      await expect(
        callRpc(socket, ClientToTracker, 'grant.claim', { challenge: good.challenge, nonce: answer.nonce }),
      ).rejects.toMatchObject({
        code: 'grant_challenge_used',
      })
      expect(await granted(identity)).toBe(GRANT)
      await plan()
    },
  )

  it(
    `${FRESH_KEYS} fresh keys from one address, each doing the work, take at most ${PER_PREFIX} grants a day ` +
      `between them`,
    async () => {
      let grants = 0
      const refusals = new Map<string, number>()
      for (let k = 0; k < FRESH_KEYS; k++) {
        const identity = NodeIdentity.generate()
        const socket = await connect(identity)
        // What a farmer would do first: just ask for a route.
        await callRpc(socket, ClientToTracker, 'route.plan', {
          modelId: swarm.manifest.modelId,
          maxTokens: 8,
          session: sid(),
        }).catch(() => undefined)
        await claimGrant(socket, identity).catch((e: { code: string }) =>
          refusals.set(e.code, (refusals.get(e.code) ?? 0) + 1),
        )
        if ((await granted(identity)) > 0) grants++
        socket.close()
      }
      // The first two tests' keys took two of the prefix's grants.
      expect(grants).toBe(PER_PREFIX - 2)
      expect(refusals.get('grants_exhausted_prefix')).toBe(FRESH_KEYS - grants)
      expect(await swarm.tracker.store.ledger.balance(GRANTS_ACCOUNT)).toBe(-PER_PREFIX * GRANT)
    },
  )

  it('once the prefix has taken its grants, the honest client is told so on its first chat', async () => {
    const client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    try {
      const run = client.generate({
        modelId: swarm.manifest.modelId,
        prompt: 'Once upon a time',
        maxTokens: 2,
        stopAtEog: false,
      })
      await expect(run.next()).rejects.toMatchObject({
        code: 'grants_exhausted_prefix',
        message: expect.stringMatching(/grants for today/),
      })
    } finally {
      client.close()
    }
  })
})
