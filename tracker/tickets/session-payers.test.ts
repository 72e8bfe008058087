// Who pays and who is counted: a host's own key chatting through it, and new keys' grants for a proof of work.
import { beforeAll, describe, expect, it } from 'vitest'
import { claimGrant, planRoute } from '../../client/grant-claim'
import { NodeIdentity } from '../../identity/keys'
import { ClientToTracker, callRpc, type Manifest } from '../../protocol'
import { storeEngines } from '../../test/store-engines'
import { packedPerSuite, sid, signedBoth, type TicketSwarms } from '../../test/ticket-swarms'

let manifest: Manifest

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(`payers of routed sessions on ${engine.name}`, () => {
    engine.setUp()
    const swarms = packedPerSuite(engine)
    /** A tracker with the model published and one (protocol-level) host serving all of it (test/ticket-swarms.ts). */
    const swarm = (...args: Parameters<TicketSwarms['start']>) => swarms().start(...args)
    beforeAll(() => {
      manifest = swarms().manifest
    })

    it(
      "audits a new host at the probation rate for other clients' sessions, never for the host's own key chatting " +
        'through it',
      async () => {
        const hostKey = NodeIdentity.generate()
        const { tracker, client, close } = await swarm('own-host', {}, hostKey)
        try {
          const stranger = NodeIdentity.generate()
          for (const k of [hostKey, stranger]) await tracker.accounts.create({ publicKey: k.publicKey })
          const plan = async (identity: NodeIdentity, session = sid()) =>
            (
              await callRpc(await client(identity), ClientToTracker, 'route.plan', {
                modelId: manifest.modelId,
                maxTokens: 16,
                session,
              })
            ).hops
          // the app's case: its host serves its own chats, and each audit would cost another host a re-run
          const own = sid()
          const [hop] = await plan(hostKey, own)
          expect(hop?.audit).toBe(0)
          // a stranger's session of the host, on probation, is always audited
          expect((await plan(stranger)).map((h) => h.audit)).toEqual([1])
          // nor may it audit its own steps (each pass would raise its own record)
          if (hop?.ticket === undefined) throw new Error('expected a one-hop ticketed route')
          const body = {
            session: own,
            step: 1,
            hostId: hop.hostId,
            blocks: [hop.blocks[0], hop.blocks[1]] as [number, number],
            tokens: 2,
            position: 0,
            modelId: manifest.modelId,
            price: hop.ticket.price,
            tracker: tracker.identity.publicKey,
            input: 'a'.repeat(64),
            output: 'b'.repeat(64),
          }
          const receipt = signedBoth(body, hostKey, hostKey)
          await expect(
            callRpc(await client(hostKey), ClientToTracker, 'audit.submit', {
              session: own,
              hostId: hop.hostId,
              blocks: body.blocks,
              steps: [{ receipt, dtype: 'f16' as const, tokens: 2, width: 64, bytes: 256 }],
              payloads: Buffer.alloc(256),
              output: Buffer.alloc(128),
            }),
          ).rejects.toMatchObject({ code: 'own_host' })
        } finally {
          await close()
        }
      },
    )

    it(
      "charges nothing for a host's own key's chats through it (local use) and does not count them in its record; " +
        "a stranger's are paid and counted",
      async () => {
        const hostKey = NodeIdentity.generate()
        const { tracker, client, close } = await swarm(
          'self-served',
          { newKeyGrantMicro: 10_000_000, grantWorkBits: 6 },
          hostKey,
        )
        try {
          const served = async (identity: NodeIdentity) => {
            const socket = await client(identity)
            const session = sid()
            const [hop] = (await planRoute(socket, identity, { modelId: manifest.modelId, maxTokens: 16, session }))
              .hops
            if (hop?.ticket === undefined) throw new Error('expected a one-hop ticketed route')
            const body = {
              ...{
                session,
                step: 1,
                hostId: hop.hostId,
                blocks: [hop.blocks[0], hop.blocks[1]] as [number, number],
                tokens: 2,
                position: 0,
              },
              ...{
                modelId: manifest.modelId,
                price: hop.ticket.price,
                tracker: tracker.identity.publicKey,
                input: 'a'.repeat(64),
                output: 'b'.repeat(64),
              },
            }
            const receipt = signedBoth(body, identity, hostKey)
            const { verdicts } = await callRpc(socket, ClientToTracker, 'receipts.submit', {
              session,
              receipts: [receipt],
            })
            expect(verdicts).toMatchObject([{ ok: true }])
            return { hostId: hop.hostId, charged: verdicts[0]?.charged }
          }
          const { hostId, charged } = await served(hostKey)
          expect(charged).toBe(0)
          expect(tracker.reputation.of(hostId).completedSteps).toBe(0)
          expect((await served(NodeIdentity.generate())).charged).toBeGreaterThan(0)
          expect(tracker.reputation.of(hostId).completedSteps).toBe(1)
        } finally {
          await close()
        }
      },
    )

    it(
      'a tracker with a new-key grant gives it once per key, for a proof of work, and opens at most N accounts a ' +
        'minute',
      async () => {
        const { tracker, client, close } = await swarm('grant', {
          newKeyGrantMicro: 2_000_000,
          newAccountsPerMinute: 2,
          grantWorkBits: 6,
        })
        try {
          const plan = async (identity = NodeIdentity.generate(), socket?: Awaited<ReturnType<typeof client>>) =>
            planRoute(socket ?? (await client(identity)), identity, {
              modelId: manifest.modelId,
              maxTokens: 16,
              session: sid(),
            })
          const a = NodeIdentity.generate()
          const socketA = await client(a)
          await plan(a, socketA)
          await plan()
          await expect(plan()).rejects.toMatchObject({
            code: 'grants_exhausted',
            message: expect.stringMatching(/at most 2 new accounts a minute/),
          })
          // The first key plans again: no second grant, and a second claim is refused.
          await plan(a, socketA)
          await expect(claimGrant(socketA, a)).rejects.toMatchObject({ code: 'grant_already_given' })
          const account = await tracker.accounts.byPublicKey(a.publicKey)
          expect(account && (await tracker.accounts.balance(account.accountId))).toBe(2_000_000)
        } finally {
          await close()
        }
      },
    )
  })
