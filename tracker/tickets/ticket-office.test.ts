import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { claimGrant, planRoute } from '../../client/grant-claim'
import { connectTracker } from '../../dataplane/tracker-connection'
import { packModel } from '../../gguf/pack'
import { tokenizerGguf } from '../../gguf/tokenizer'
import { NodeIdentity } from '../../identity/keys'
import { signOpen, verifyTicket } from '../../identity/tickets'
import {
  ClientToTracker,
  callRpc,
  HostToTracker,
  type Manifest,
  type Receipt,
  type ReceiptBody,
  receiptMessage,
  stepMessage,
} from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { readyState, TEST_PROFILE } from '../../test/peers'
import { createModelTorrent } from '../../test/programs'
import { type StoreEngine, storeEngines } from '../../test/store-engines'
import { Tracker, type TrackerOptions } from '../server'

/** A receipt as a host hands it in: the client's signature of the step embedded, then the host's of the whole. */
function signedBoth(body: Omit<ReceiptBody, 'client'>, client: NodeIdentity, host: NodeIdentity): Receipt {
  const withClient: ReceiptBody = { ...body, client: client.sign(stepMessage(body)) }
  return { ...withClient, signature: host.sign(receiptMessage(withClient)) }
}

const sid = () => randomBytes(16).toString('hex')

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let manifest: Manifest
let files: { torrent: Buffer; tokenizer: Buffer }
/** The engine the running suite is on, and each named tracker's database on it (a restart opens the same one). */
let engine: StoreEngine
const databases = new Map<string, string>()

async function database(name: string): Promise<string> {
  let location = databases.get(name)
  if (location === undefined) {
    location = (await engine.fresh()).location
    databases.set(name, location)
  }
  return location
}

/** A tracker with the model published and one (protocol-level) host serving all of it. */
async function swarm(name: string, options: Partial<TrackerOptions> = {}, hostKey = NodeIdentity.generate()) {
  const tracker = await Tracker.start({ dbPath: await database(name), keyPath: join(dir, `${name}.pem`), ...options })
  const publisher = await connectTracker(tracker.url, '/clients', NodeIdentity.generate())
  await callRpc(publisher, ClientToTracker, 'model.publish', { manifest, ...files })
  publisher.close()
  const host = await connectTracker(tracker.url, '/hosts', hostKey)
  const hello = await callRpc(host, HostToTracker, 'host.hello', {
    profile: TEST_PROFILE,
    state: readyState(manifest.modelId, [0, manifest.nLayer]),
  })
  const clients: { close(): void }[] = [host]
  const client = async (identity = NodeIdentity.generate()) => {
    const socket = await connectTracker(tracker.url, '/clients', identity)
    clients.push(socket)
    return socket
  }
  const close = async () => {
    for (const c of clients) c.close()
    await tracker.close()
  }
  return { tracker, hello, client, close }
}

for (const each of await storeEngines())
  describe.skipIf(each.skip !== undefined)(`tickets for routed sessions on ${each.name}`, () => {
    each.setUp()
    beforeAll(async () => {
      engine = each
      databases.clear()
      ;({ dir, cleanup } = await scratchDir())
      manifest = await packModel({ source: STORIES_260K, out: join(dir, 'stories'), blocksPerArtifact: 2 })
      files = {
        torrent: await createModelTorrent(join(dir, 'stories'), manifest, []),
        tokenizer: await tokenizerGguf(join(dir, 'stories', 'head.gguf')),
      }
    })
    afterAll(async () => {
      await cleanup()
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
          // the app's case: its host serves its own chats, and each audit would hold the chat for a re-run
          const own = sid()
          const [hop] = await plan(hostKey, own)
          expect(hop?.audit).toBe(0)
          expect((await plan(stranger)).map((h) => h.audit)).toEqual([0.5])
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
      "pays a host for its own key's chats through it but does not count them in its record; a stranger's " +
        'do count',
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
            expect(verdicts[0]?.charged).toBeGreaterThan(0)
            return hop.hostId
          }
          const hostId = await served(hostKey)
          expect(tracker.reputation.of(hostId).completedSteps).toBe(0)
          await served(NodeIdentity.generate())
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

        const second = await Tracker.start({ dbPath: await database('restart'), keyPath: join(dir, 'restart.pem') })
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
