// The ticket office: every hop's ticket signed for the payer's account, credit holds per routed session.
import { join } from 'node:path'
import { beforeAll, describe, expect, it } from 'vitest'
import { connectTracker } from '../../dataplane/tracker-connection'
import { NodeIdentity } from '../../identity/keys'
import { signOpen, verifyTicket } from '../../identity/tickets'
import { ClientToTracker, callRpc, HostToTracker, type Manifest } from '../../protocol'
import { readyState, TEST_PROFILE } from '../../test/peers'
import { storeEngines } from '../../test/store-engines'
import { packedPerSuite, sid, signedBoth, type TicketSwarms } from '../../test/ticket-swarms'
import { Tracker } from '../server'

let manifest: Manifest

for (const engine of await storeEngines())
  describe.skipIf(engine.skip !== undefined)(`tickets for routed sessions on ${engine.name}`, () => {
    engine.setUp()
    const swarms = packedPerSuite(engine)
    /** A tracker with the model published and one (protocol-level) host serving all of it (test/ticket-swarms.ts). */
    const swarm = (...args: Parameters<TicketSwarms['start']>) => swarms().start(...args)
    /** Each named tracker's database (a restart opens the same one). */
    const database = (name: string) => swarms().database(name)
    beforeAll(() => {
      manifest = swarms().manifest
    })

    it(
      'refuses route.plan to a key without an account; with one, every hop carries a ticket signed by the tracker ' +
        'that the host can check',
      async () => {
        const { tracker, hello, client, close } = await swarm('no-grant')
        try {
          expect(hello.trackerKey).toBe(tracker.identity.publicKey)
          const identity = NodeIdentity.generate()
          const socket = await client(identity)
          const session = sid()
          await expect(
            callRpc(socket, ClientToTracker, 'route.plan', { modelId: manifest.modelId, maxTokens: 64, session }),
          ).rejects.toMatchObject({
            code: 'no_account',
            message: expect.stringMatching(/has no account on this tracker; ask the operator/),
          })
          await tracker.accounts.create({ publicKey: identity.publicKey })
          const route = await callRpc(socket, ClientToTracker, 'route.plan', {
            modelId: manifest.modelId,
            maxTokens: 64,
            session,
          })
          const [hop] = route.hops
          expect(hop?.ticket).toMatchObject({
            session,
            clientKey: identity.publicKey,
            hostId: hello.hostId,
            blocks: [0, 5],
            maxTokens: 64,
            modelId: manifest.modelId,
          })
          const ticket = hop?.ticket
          if (ticket === undefined) throw new Error('no ticket')
          const open = { blocks: ticket.blocks, maxTokens: 64 }
          expect(() =>
            verifyTicket(ticket, {
              trackerKey: hello.trackerKey,
              session,
              hostId: hello.hostId,
              openSignature: signOpen(identity, ticket, open),
              ...open,
            }),
          ).not.toThrow()
        } finally {
          await close()
        }
      },
    )

    it(
      'holds credits for each routed session: one the balance less holds cannot cover is refused until ' +
        'session.end frees a hold',
      async () => {
        const { tracker, client, close } = await swarm('holds')
        try {
          const identity = NodeIdentity.generate()
          // stories260k: 100 micro per completion token plus 5 blocks
          // of rounding: 105 × 1000 tokens = 105 000 a session.
          await tracker.accounts.create({ publicKey: identity.publicKey, grantMicro: 150_000 })
          const socket = await client(identity)
          const plan = (session: string, maxTokens = 1000) =>
            callRpc(socket, ClientToTracker, 'route.plan', { modelId: manifest.modelId, maxTokens, session })
          await expect(plan(sid(), 2000)).rejects.toMatchObject({
            code: 'insufficient_credits',
            details: { availableMicro: 150_000, neededMicro: 210_000 },
          })
          const first = sid()
          await plan(first)
          await expect(plan(sid())).rejects.toMatchObject({
            code: 'insufficient_credits',
            details: { availableMicro: 45_000 },
          })
          // A failover's re-plan of the same session takes no second hold.
          await plan(first)
          await callRpc(socket, ClientToTracker, 'session.end', { session: first })
          await plan(sid())
        } finally {
          await close()
        }
      },
    )

    it('gives one hold when one account plans three sessions at once that its balance covers one of', async () => {
      const { tracker, client, close } = await swarm('holds-at-once')
      try {
        const identity = NodeIdentity.generate()
        await tracker.accounts.create({ publicKey: identity.publicKey, grantMicro: 150_000 })
        const socket = await client(identity)
        const plans = [sid(), sid(), sid()].map((session) =>
          callRpc(socket, ClientToTracker, 'route.plan', { modelId: manifest.modelId, maxTokens: 1000, session }),
        )
        const results = await Promise.allSettled(plans)
        expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1)
        expect(results.filter((r) => r.status === 'rejected').map((r) => (r.reason as { code?: string }).code)).toEqual(
          ['insufficient_credits', 'insufficient_credits'],
        )
      } finally {
        await close()
      }
    })

    it(
      'keeps routed sessions and holds across a restart: a receipt routed before it still pays once, the hold ' +
        'still counts until it expires',
      async () => {
        const hostKey = NodeIdentity.generate()
        const first = await swarm('restart', {}, hostKey)
        const identity = NodeIdentity.generate()
        await first.tracker.accounts.create({ publicKey: identity.publicKey, grantMicro: 150_000 })
        const session = sid()
        const plan = (socket: Awaited<ReturnType<typeof first.client>>, id: string) =>
          callRpc(socket, ClientToTracker, 'route.plan', {
            modelId: manifest.modelId,
            maxTokens: 1000,
            promptTokens: 4,
            session: id,
          })
        const hostHello = first.hello
        const route = await plan(await first.client(identity), session)
        const ticket = route.hops[0]?.ticket
        await first.close()

        const second = await Tracker.start({
          dbPath: await database('restart'),
          keyPath: join(swarms().dir, 'restart.pem'),
        })
        try {
          const socket = await connectTracker(second.url, '/clients', identity)
          const hostAgain = await connectTracker(second.url, '/hosts', hostKey)
          await callRpc(hostAgain, HostToTracker, 'host.hello', {
            profile: TEST_PROFILE,
            state: readyState(manifest.modelId, [0, manifest.nLayer]),
          })
          // The hold taken before the restart (4 prompt tokens and 996 more) still counts against the 150 000.
          const held = 4 * 25 + 996 * 105
          await expect(plan(socket, sid())).rejects.toMatchObject({
            code: 'insufficient_credits',
            details: { availableMicro: 150_000 - held },
          })
          if (ticket === undefined || route.hops.length !== 1 || route.hops[0]?.hostId !== hostHello.hostId)
            throw new Error('expected a one-hop route through the test host')
          const body = {
            session,
            step: 1,
            hostId: hostHello.hostId,
            blocks: [ticket.blocks[0], ticket.blocks[1]] as [number, number],
            tokens: 4,
            position: 0,
            modelId: manifest.modelId,
            price: ticket.price,
            tracker: second.identity.publicKey,
            input: 'a'.repeat(64),
            output: 'b'.repeat(64),
          }
          const receipt = signedBoth(body, identity, hostKey)
          const [paid] = (await callRpc(hostAgain, HostToTracker, 'receipts.submit', { receipts: [receipt] })).verdicts
          expect(paid).toMatchObject({
            ok: true,
            charged: 4 * ticket.price.promptMicroPerToken + ticket.price.completionMicroPerToken,
          })
          const [again] = (await callRpc(hostAgain, HostToTracker, 'receipts.submit', { receipts: [receipt] })).verdicts
          expect(again).toMatchObject({ code: 'already_settled', charged: 0 })
          // Idle past its expiry, the hold is released: the account can route again.
          await second.tickets.sweep(Date.now() + 16 * 60_000)
          await plan(socket, sid())
          expect(await second.store.ledger.total()).toBe(0)
          socket.close()
          hostAgain.close()
        } finally {
          await second.close()
        }
      },
    )
  })
