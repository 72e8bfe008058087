// A flood of pairing hellos against the asked app's real endpoint on loopback. The attack as measured before the
// change: eight hellos a minute from one address (each claiming a fresh key) kept the pending-pairings book full, so
// the real app next door got `pairing_busy` for as long as the flood went on.
import { afterEach, describe, expect, it } from 'vitest'
import { NodeIdentity, nodeIdOf } from '../../../identity/keys'
import { type LanPeer, MAX_PENDING_PAIRINGS, MAX_PENDING_PER_ADDRESS } from '../../../protocol'
import { AskedPairings } from './asked-pairings'
import { AskingPairings } from './asking-pairings'
import { PairingBook } from './pairing-book'
import { PairingServer } from './pairing-server'

const TRACKER_PORT = 7070
const closers: (() => Promise<void> | void)[] = []

afterEach(async () => {
  for (const close of closers.splice(0)) await close()
})

/** App A's pairing endpoint, knowing by mDNS the apps in `known` (key → the address it advertised from). */
async function askedApp(known: Map<string, string>) {
  const a = NodeIdentity.generate()
  const book = new PairingBook(() => {})
  const asked = new AskedPairings({
    book,
    key: () => a.publicKey,
    trackerPort: () => TRACKER_PORT,
    admit: async () => {},
    log: () => {},
    advertised: (key, address) => known.get(key) === address,
  })
  const server = await PairingServer.start(asked, '127.0.0.1', () => {})
  closers.push(
    () => server.close(),
    () => book.close(),
  )
  const peer: LanPeer = {
    key: a.publicKey,
    hostId: nodeIdOf(a.publicKey),
    name: 'kitchen',
    address: '127.0.0.1',
    trackerPort: TRACKER_PORT,
    pairingPort: server.port,
    paired: false,
  }
  return { book, server, peer }
}

/** A hello as a flooder sends it: a fresh key each time, from this process's loopback address. */
async function hello(port: number): Promise<{ status: number; code?: string }> {
  const res = await fetch(`http://127.0.0.1:${port}/pair/hello`, {
    method: 'POST',
    body: JSON.stringify({ key: NodeIdentity.generate().publicKey, name: 'flood' }),
    headers: { 'content-type': 'application/json' },
  })
  const body = (await res.json()) as { ok: boolean; error?: { code: string } }
  return { status: res.status, ...(body.error === undefined ? {} : { code: body.error.code }) }
}

describe('a flood of pairing hellos', () => {
  it('holds two waiting pairings per address at most, and an app seen on the network still pairs', async () => {
    const b = NodeIdentity.generate()
    const asked = await askedApp(new Map([[b.publicKey, '127.0.0.1']]))
    const answers = []
    for (let i = 0; i < MAX_PENDING_PAIRINGS; i++) answers.push(await hello(asked.server.port))
    expect(answers.filter((a) => a.status === 200)).toHaveLength(MAX_PENDING_PER_ADDRESS)
    expect(answers.filter((a) => a.code === 'pairing_busy')).toHaveLength(
      MAX_PENDING_PAIRINGS - MAX_PENDING_PER_ADDRESS,
    )

    const askingBook = new PairingBook(() => {})
    closers.push(() => askingBook.close())
    const asking = new AskingPairings({
      book: askingBook,
      identity: () => b,
      name: () => 'study',
      join: async () => {},
      log: () => {},
    })
    await asking.ask(asked.peer)
    const mine = askingBook.views()[0]
    expect(mine?.code).toMatch(/^\d{6}$/)
    expect(asked.book.views().find((v) => v.peerKey === b.publicKey)?.code).toBe(mine?.code)
  })

  it('keeps refusing the flooding address while its pairings wait, and tells it why', async () => {
    const asked = await askedApp(new Map())
    for (let i = 0; i < MAX_PENDING_PER_ADDRESS; i++) expect((await hello(asked.server.port)).status).toBe(200)
    const refused = await fetch(`http://127.0.0.1:${asked.server.port}/pair/hello`, {
      method: 'POST',
      body: JSON.stringify({ key: NodeIdentity.generate().publicKey, name: 'flood' }),
      headers: { 'content-type': 'application/json' },
    })
    const body = (await refused.json()) as { error: { code: string; message: string } }
    expect(body.error.code).toBe('pairing_busy')
    expect(body.error.message).toMatch(/from this address/)
  })
})
