import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectTracker } from '../../dataplane/tracker-connection'
import { NodeIdentity } from '../../identity/keys'
import {
  ClientToTracker,
  callRpc,
  HostToTracker,
  IDLE_STATE,
  jsonFrame,
  MAX_FRAME_BYTES,
  serveRpc,
  TrackerToHost,
} from '../../protocol'
import { TEST_PROFILE } from '../../test/peers'
import { Tracker } from '../server'

let tracker: Tracker

describe('the relay', () => {
  beforeAll(async () => {
    tracker = await Tracker.start({ dbPath: ':memory:' })
  })
  afterAll(async () => {
    await tracker?.close()
  })

  it(
    'carries no frame larger than a host takes, and at most ' + '8 in flight per key; the host is told who sent each',
    async () => {
      const host = await connectTracker(tracker.url, '/hosts', NodeIdentity.generate())
      const sender = NodeIdentity.generate()
      const client = await connectTracker(tracker.url, '/clients', sender)
      const other = await connectTracker(tracker.url, '/clients', NodeIdentity.generate())
      try {
        const { hostId } = await callRpc(host, HostToTracker, 'host.hello', {
          profile: TEST_PROFILE,
          state: IDLE_STATE,
        })
        // A slow host: every frame waits until `release`.
        let release: () => void = () => {}
        const released = new Promise<void>((r) => {
          release = r
        })
        const senders: string[] = []
        const slowHost = async ({ frame, from }: { frame: Uint8Array; from: string }) => {
          senders.push(from)
          await released
          return { frame }
        }
        const noPunch = async (): Promise<never> => {
          throw new Error('this host punches no channels')
        }
        serveRpc(host, TrackerToHost, { 'relay.frame': slowHost, 'punch.offer': noPunch }, undefined)
        const frame = jsonFrame('ok', '0'.repeat(32), 0, {})
        const forward = (socket: typeof client) =>
          callRpc(socket, ClientToTracker, 'relay.forward', { hostId, frame }, 10_000)
        const pending = Array.from({ length: 8 }, () => forward(client))
        await new Promise((r) => setTimeout(r, 200))
        await expect(forward(client)).rejects.toMatchObject({
          code: 'relay_quota',
          message: expect.stringMatching(/8 relayed frames in flight/),
        })
        await expect(
          callRpc(
            client,
            ClientToTracker,
            'relay.forward',
            { hostId, frame: new Uint8Array(MAX_FRAME_BYTES + 1) },
            30_000,
          ),
        ).rejects.toMatchObject({
          code: 'frame_too_large',
        })
        // Another key is not held up by the first one's quota.
        const theirs = forward(other)
        release()
        await Promise.all([...pending, theirs])
        await forward(client)
        expect(new Set(senders)).toContain(sender.publicKey)
        expect(senders).toHaveLength(10)
      } finally {
        for (const s of [host, client, other]) s.close()
      }
    },
  )
})
