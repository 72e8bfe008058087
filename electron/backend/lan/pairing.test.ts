// Both sides of a pairing over the real wire (the asked app's HTTP endpoint on loopback), without mDNS:
// the asking side is given the found app as discovery would list it.
import { afterEach, describe, expect, it } from 'vitest'
import { NodeIdentity, nodeIdOf } from '../../../identity/keys'
import { type LanPeer, MAX_PAIRING_BODY_BYTES, pairingConfirmMessage } from '../../../protocol'
import { AskedPairings } from './asked-pairings'
import { AskingPairings } from './asking-pairings'
import { PairingBook } from './pairing-book'
import { PairingClient } from './pairing-client'
import { PairingServer } from './pairing-server'

const TRACKER_PORT = 7070
const servers: PairingServer[] = []
const books: PairingBook[] = []

afterEach(async () => {
  for (const s of servers.splice(0)) await s.close()
  for (const b of books.splice(0)) b.close()
})

async function until(what: string, check: () => boolean, timeoutMs = 10_000): Promise<void> {
  for (const deadline = Date.now() + timeoutMs; !check(); ) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 20))
  }
}

/** App A (asked, its endpoint on loopback) and app B (asking), each with its own book and identity. */
async function twoApps(ttlMs = 60_000) {
  const a = NodeIdentity.generate()
  const b = NodeIdentity.generate()
  const admitted: string[] = []
  const joined: string[] = []
  const askedBook = new PairingBook(() => {}, ttlMs)
  const askingBook = new PairingBook(() => {}, ttlMs)
  books.push(askedBook, askingBook)
  const asked = new AskedPairings({
    book: askedBook,
    key: () => a.publicKey,
    trackerPort: () => TRACKER_PORT,
    admit: async (key) => void admitted.push(key),
    log: () => {},
  })
  const server = await PairingServer.start(asked, '127.0.0.1', () => {})
  servers.push(server)
  const asking = new AskingPairings({
    book: askingBook,
    identity: () => b,
    name: () => 'study',
    join: async (url) => void joined.push(url),
    log: () => {},
  })
  const peer: LanPeer = {
    key: a.publicKey,
    hostId: nodeIdOf(a.publicKey),
    name: 'kitchen',
    address: '127.0.0.1',
    trackerPort: TRACKER_PORT,
    pairingPort: server.port,
    paired: false,
  }
  return { a, b, asked, asking, askedBook, askingBook, server, peer, admitted, joined }
}

describe('pairing two apps with a code on both screens', () => {
  it(
    'shows the same six digits on both screens, and ' + 'admits the asking key only once both users confirmed',
    async () => {
      const apps = await twoApps()
      await apps.asking.ask(apps.peer)
      const [mine] = apps.askingBook.views()
      const [theirs] = apps.askedBook.views()
      expect(mine?.code).toMatch(/^\d{6}$/)
      expect(theirs?.code).toBe(mine?.code)
      expect(theirs?.peerKey).toBe(apps.b.publicKey)

      await apps.asking.confirm(mine?.pairingId ?? '')
      await until('the asked screen sees the confirmation', () => apps.askedBook.views()[0]?.confirmedThere === true)
      expect(apps.admitted).toEqual([])
      expect(apps.joined).toEqual([])

      await apps.asked.confirmHere(theirs?.pairingId ?? '')
      expect(apps.admitted).toEqual([apps.b.publicKey])
      await until('the asking app joins', () => apps.joined.length === 1)
      expect(apps.joined).toEqual([`http://127.0.0.1:${TRACKER_PORT}`])
      expect(apps.askingBook.views()[0]?.state).toBe('paired')
      expect(apps.askedBook.views()[0]?.state).toBe('paired')
    },
  )

  it('adds no key when the confirmation signs another code, and says so on the asked screen', async () => {
    const apps = await twoApps()
    await apps.asking.ask(apps.peer)
    const [theirs] = apps.askedBook.views()
    const pairingId = theirs?.pairingId ?? ''
    const wrong = theirs?.code === '000000' ? '000001' : '000000'
    await apps.asked.confirmHere(pairingId)
    const client = new PairingClient('127.0.0.1', apps.server.port)
    await expect(client.confirm(pairingId, apps.b.sign(pairingConfirmMessage(pairingId, wrong)))).rejects.toMatchObject(
      { code: 'pairing_failed' },
    )
    expect(apps.admitted).toEqual([])
    expect(apps.askedBook.views()[0]).toMatchObject({
      state: 'failed',
      message: expect.stringMatching(/another code.*nothing was added/),
    })
  })

  it('adds no key once the minute passed, and both screens say it expired', async () => {
    const apps = await twoApps(300)
    await apps.asking.ask(apps.peer)
    const [mine] = apps.askingBook.views()
    await new Promise((r) => setTimeout(r, 400))
    expect(apps.askedBook.views()[0]).toMatchObject({
      state: 'expired',
      message: expect.stringMatching(/expired.*ask again/),
    })
    expect(apps.askingBook.views()[0]?.state).toBe('expired')
    await expect(apps.asking.confirm(mine?.pairingId ?? '')).rejects.toMatchObject({ code: 'pairing_expired' })
    await expect(apps.asked.confirmHere(mine?.pairingId ?? '')).rejects.toMatchObject({ code: 'pairing_expired' })
    expect(apps.admitted).toEqual([])
    expect(apps.joined).toEqual([])
  })

  it('tells the asking screen when the asked user refuses, and adds nothing', async () => {
    const apps = await twoApps()
    await apps.asking.ask(apps.peer)
    const pairingId = apps.askingBook.views()[0]?.pairingId ?? ''
    await apps.asking.confirm(pairingId)
    apps.asked.refuse({ pairingId }, 'here')
    await until('the asking screen hears of the refusal', () => apps.askingBook.views()[0]?.state === 'refused')
    expect(apps.askingBook.views()[0]?.message).toMatch(/refused on kitchen/)
    expect(apps.admitted).toEqual([])
    expect(apps.joined).toEqual([])
  })

  it('refuses an app that answers with another key than it advertised', async () => {
    const apps = await twoApps()
    const impostor = { ...apps.peer, key: NodeIdentity.generate().publicKey }
    await expect(apps.asking.ask(impostor)).rejects.toMatchObject({
      code: 'pairing_failed',
      message: expect.stringMatching(/another key/),
    })
    expect(apps.askingBook.views()).toEqual([])
  })

  it('answers malformed, oversized and unknown messages with a typed error, and keeps serving', async () => {
    const apps = await twoApps()
    const url = `http://127.0.0.1:${apps.server.port}`
    const post = async (path: string, body: string) => {
      const res = await fetch(`${url}${path}`, {
        method: 'POST',
        body,
        headers: { 'content-type': 'application/json' },
      })
      return {
        status: res.status,
        body: (await res.json()) as { ok: boolean; error?: { code: string; message: string } },
      }
    }
    expect(await post('/pair/hello', '{not json')).toMatchObject({
      status: 400,
      body: { ok: false, error: { code: 'bad_request' } },
    })
    expect(await post('/pair/hello', JSON.stringify({ key: 'short', name: '' }))).toMatchObject({
      status: 400,
      body: { error: { code: 'bad_request', message: expect.stringMatching(/key: a public key/) } },
    })
    expect(await post('/pair/hello', 'x'.repeat(MAX_PAIRING_BODY_BYTES + 1))).toMatchObject({
      status: 413,
      body: { error: { code: 'too_large' } },
    })
    expect(await post('/pair/steal', '{}')).toMatchObject({ status: 404, body: { error: { code: 'not_found' } } })
    expect(await post('/pair/status', JSON.stringify({ pairingId: 'A'.repeat(22) }))).toMatchObject({
      status: 404,
      body: { error: { code: 'pairing_unknown' } },
    })
    await apps.asking.ask(apps.peer)
    expect(apps.askedBook.views()).toHaveLength(1)
  })
})
