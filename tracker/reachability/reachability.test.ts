// The tracker's dial-back on loopback: real dial-back answers (the host's own answerDialBack over http and https,
// with its own certificate) and a real tracker; the hosts are
// protocol-level peers, so each can offer what a liar would.
import { createServer as createHttpServer, type Server } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectTracker } from '../../dataplane/tracker-connection'
import { hostCertificate } from '../../host/network/certificate'
import { answerDialBack, dialBackProver } from '../../host/network/dial-back-answer'
import { NodeIdentity } from '../../identity/keys'
import { callRpc, certificateMessage, DIAL_BACK_PATH, HostToTracker, type ServingState } from '../../protocol'
import { scratchDir } from '../../test/models'
import { readyState, TEST_PROFILE } from '../../test/peers'
import { Tracker } from '../server'
import { addressScope, mayDial } from './address-scope'

let tracker: Tracker
let dir = ''
let cleanup: () => Promise<void> = async () => {}
const servers: Server[] = []

/**
 * The host's dial-back answer for `identity` on a free loopback port: http, or https with the host's own certificate.
 */
async function answering(identity: NodeIdentity, tls?: { key: string; cert: string }): Promise<string> {
  const onRequest = answerDialBack.bind(null)
  const server =
    tls === undefined
      ? createHttpServer((q, s) => onRequest(q, s, dialBackProver(identity)))
      : createHttpsServer(tls, (q, s) => onRequest(q, s, dialBackProver(identity)))
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `${tls === undefined ? 'ws' : 'wss'}://127.0.0.1:${(server.address() as AddressInfo).port}/`
}

/** A host that says it is ready at `offer`; resolves the endpoint the tracker proved (and the host list's). */
async function serveAt(
  identity: NodeIdentity,
  offer: Partial<ServingState>,
): Promise<{ acked: string | null | undefined; listed: string | null | undefined; tls: unknown }> {
  const socket = await connectTracker(tracker.url, '/hosts', identity)
  try {
    // no model: the tracker checks what a host serves against its catalog, and dials back whatever it serves
    const state = { ...readyState('m', [0, 1]), modelId: null, blocks: null, endpoint: null, ...offer }
    await callRpc(socket, HostToTracker, 'host.hello', { profile: TEST_PROFILE, state: { ...state, status: 'idle' } })
    const { endpoint } = await callRpc(socket, HostToTracker, 'host.state', state)
    const listed = tracker.registry.get(identity.id)?.state
    return { acked: endpoint, listed: listed?.endpoint, tls: listed?.tls }
  } finally {
    socket.close()
  }
}

describe('the tracker’s dial-back', () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
    tracker = await Tracker.start({ dbPath: ':memory:' })
  })
  afterAll(async () => {
    await tracker?.close()
    for (const s of servers) s.close()
    await cleanup()
  })

  it(
    'routes to an endpoint only where the host proved its key; one that answers for another key is not its, and ' +
      'it is relayed',
    async () => {
      const host = NodeIdentity.generate()
      const own = await answering(host)
      expect(await serveAt(host, { candidates: [own] })).toMatchObject({ acked: own, listed: own })
      const impostor = NodeIdentity.generate()
      expect(await serveAt(impostor, { endpoint: own, candidates: [own] })).toMatchObject({ acked: null, listed: null })
      // an address where nothing answers
      expect(await serveAt(NodeIdentity.generate(), { candidates: ['ws://127.0.0.1:1/'] })).toMatchObject({
        acked: null,
        listed: null,
      })
    },
  )

  it(
    'proves a wss:// endpoint only with the certificate ' + 'its host signed; an unsigned fingerprint is dropped',
    async () => {
      const host = NodeIdentity.generate()
      const certificate = await hostCertificate(dir, host)
      const endpoint = await answering(host, certificate)
      const signed = { fingerprint: certificate.fingerprint, signature: certificate.signature }
      expect(await serveAt(host, { candidates: [endpoint], tls: signed })).toMatchObject({
        acked: endpoint,
        tls: signed,
      })
      // another certificate behind the same key: whoever presents it is not the host that signed the pinned one
      const other = await hostCertificate(`${dir}/other`, host)
      const elsewhere = await answering(host, other)
      expect(await serveAt(host, { candidates: [elsewhere], tls: signed })).toMatchObject({ acked: null })
      const forged = {
        fingerprint: certificate.fingerprint,
        signature: NodeIdentity.generate().sign(certificateMessage(certificate.fingerprint)),
      }
      expect(await serveAt(NodeIdentity.generate(), { candidates: [endpoint], tls: forged })).toMatchObject({
        acked: null,
        tls: undefined,
      })
    },
  )

  it(
    'dials no address on another network for a host on the internet, and only the address it sees for a ' +
      'public one',
    () => {
      // a host seen at its router's public address: not its private
      // LAN address, not loopback, not another public address
      expect(mayDial('10.1.0.10', '198.18.0.101')).toBe(false)
      expect(mayDial('127.0.0.1', '198.18.0.101')).toBe(false)
      expect(mayDial('198.18.0.102', '198.18.0.101')).toBe(false)
      expect(mayDial('198.18.0.101', '::ffff:198.18.0.101')).toBe(true)
      // a host on the tracker's LAN or computer: its private addresses
      expect(mayDial('192.168.1.5', '192.168.1.9')).toBe(true)
      expect(mayDial('127.0.0.1', '127.0.0.1')).toBe(true)
      expect(mayDial('127.0.0.1', '192.168.1.9')).toBe(false)
      expect(addressScope('172.20.3.4')).toBe('private')
      expect(addressScope('172.32.0.1')).toBe('public')
    },
  )

  it('a host’s dial-back answer refuses malformed asks with a typed error, and keeps answering', async () => {
    const endpoint = (await answering(NodeIdentity.generate())).replace('ws:', 'http:').replace(/\/$/, '')
    const ask = async (query: string) => {
      const res = await fetch(`${endpoint}${DIAL_BACK_PATH}${query}`)
      return { status: res.status, body: (await res.json()) as { error?: { code: string }; publicKey?: string } }
    }
    expect(await ask('?nonce=short&tracker=abcdefghijklmnopqrstuvwxyz')).toMatchObject({
      status: 400,
      body: { error: { code: 'bad_nonce' } },
    })
    expect(await ask(`?nonce=${'n'.repeat(20)}&tracker=${'x'.repeat(500)}`)).toMatchObject({
      status: 400,
      body: { error: { code: 'bad_tracker_key' } },
    })
    expect((await fetch(`${endpoint}/anything`)).status).toBe(426)
    expect(await ask(`?nonce=${'n'.repeat(20)}&tracker=${'t'.repeat(43)}`)).toMatchObject({
      status: 200,
      body: { publicKey: expect.any(String) },
    })
  })
})
