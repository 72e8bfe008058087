// Logins are bound to the tracker: a signature made for one tracker opens no other.
import { io } from 'socket.io-client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectTracker } from '../../dataplane/tracker-connection'
import { NodeIdentity } from '../../identity/keys'
import type { AuthChallenge } from '../../protocol'
import { Tracker } from '../server'

let a: Tracker
let b: Tracker

beforeAll(async () => {
  a = await Tracker.start({ dbPath: ':memory:' })
  b = await Tracker.start({ dbPath: ':memory:' })
})
afterAll(async () => {
  await a?.close()
  await b?.close()
})

const challengeOf = async (tracker: Tracker) =>
  (await (await fetch(`${tracker.url}/auth/challenge`)).json()) as AuthChallenge

/** Connects to `tracker`'s /clients with a handshake as given; the refusal's message, or 'connected'. */
function handshake(tracker: Tracker, auth: object): Promise<string> {
  return new Promise((resolve) => {
    const s = io(`${tracker.url}/clients`, { auth, transports: ['websocket'], reconnection: false })
    s.once('connect', () => {
      s.close()
      resolve('connected')
    })
    s.once('connect_error', (e) => {
      s.close()
      resolve(e.message)
    })
  })
}

describe('tracker-bound login', () => {
  it('names the tracker in its challenge: each tracker its own key', async () => {
    expect((await challengeOf(a)).tracker).toBe(a.identity.publicKey)
    expect((await challengeOf(b)).tracker).toBe(b.identity.publicKey)
    expect(a.identity.publicKey).not.toBe(b.identity.publicKey)
  })

  it(
    'refuses a relayed nonce: tracker A passes on B’s ' + 'challenge, the victim signs it for A, and B says no',
    async () => {
      const victim = NodeIdentity.generate()
      // A, joined by the victim, fetches a nonce from B and presents it as its own (under A's key,
      // which the victim expects of A).
      const fromB = await challengeOf(b)
      const signedForA = victim.answer('/clients', { nonce: fromB.nonce, tracker: a.identity.publicKey })
      expect(await handshake(b, signedForA)).toMatch(/does not match .* on this tracker/)
      // The same nonce answered for B itself would have opened B: the refusal is the tracker binding, not a bad nonce.
      const honest = await challengeOf(b)
      expect(await handshake(b, victim.answer('/clients', honest))).toBe('connected')
    },
  )

  it('a client that knows the tracker’s key refuses a tracker naming another one', async () => {
    // A look-alike at B's address passing on B's challenges names B's key, not the one expected.
    await expect(
      connectTracker(b.url, '/clients', NodeIdentity.generate(), { trackerKey: a.identity.publicKey }),
    ).rejects.toMatchObject({
      code: 'wrong_tracker',
      message: expect.stringMatching(/posing as it/),
    })
    const socket = await connectTracker(b.url, '/clients', NodeIdentity.generate(), {
      trackerKey: b.identity.publicKey,
    })
    expect(socket.trackerKey).toBe(b.identity.publicKey)
    socket.close()
  })
})
