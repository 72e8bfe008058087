// A private swarm (allowedKeys) says no to a stranger on every surface the tracker serves: Socket.IO,
// the gateway, the dashboards and the BitTorrent routes; and still serves its members end to end.
import { randomBytes } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { SwarmClient } from '../../client/swarm-client'
import { connectTracker, nodeAuthHeaders } from '../../dataplane/tracker-connection'
import { NodeIdentity } from '../../identity/keys'
import { signOpen } from '../../identity/tickets'
import { ClientToTracker, callRpc, DASHBOARD_SCOPE, decodeFrame, jsonFrame, readJson, WireError } from '../../protocol'
import { STORIES_260K, scratchDir } from '../../test/models'
import { createAccount, type InProcessSwarm, startSwarm } from '../../test/programs'
import { Tracker } from '../server'

const ADMIN = 'admin-token-for-tests'
const HOST_ID = '0123456789abcdef0123'

async function get(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers })
  const text = await res.text()
  return { status: res.status, text }
}

const bearer = (apiKey: string) => ({ authorization: `Bearer ${apiKey}` })

/** A BitTorrent announce as a client sends it: binary infohash and peer id, URL-encoded. */
function announceUrl(tracker: Tracker): string {
  const bin = (hex: string) => `%${hex}`.repeat(20)
  const rest = '&port=6881&uploaded=0&downloaded=0&left=0&compact=1&event=started'
  return `${tracker.url}/announce?info_hash=${bin('ab')}&peer_id=${bin('2d')}${rest}`
}

describe('a private swarm refuses an unlisted key', () => {
  const member = NodeIdentity.generate()
  const stranger = NodeIdentity.generate()
  let tracker: Tracker
  let open: Tracker
  let memberKey = ''
  let strangerKey = ''
  let keylessKey = ''

  beforeAll(async () => {
    tracker = await Tracker.start({
      dbPath: ':memory:',
      allowedKeys: [member.publicKey],
      gateway: { adminToken: ADMIN },
    })
    open = await Tracker.start({ dbPath: ':memory:' })
    memberKey = (await createAccount(tracker.url, ADMIN, { public_key: member.publicKey })).apiKey
    strangerKey = (await createAccount(tracker.url, ADMIN, { public_key: stranger.publicKey })).apiKey
    keylessKey = (await createAccount(tracker.url, ADMIN, { name: 'no key' })).apiKey
  })
  afterAll(async () => {
    await tracker?.close()
    await open?.close()
  })

  it('admits the listed keys and its own, nobody else', () => {
    expect(tracker.admission.admits(member.publicKey)).toBe(true)
    expect(tracker.admission.admits(tracker.identity.publicKey)).toBe(true)
    expect(tracker.admission.admits(stranger.publicKey)).toBe(false)
    expect(tracker.admission.admits(null)).toBe(false)
    expect(open.admission.admits(stranger.publicKey) && open.admission.admits(null)).toBe(true)
  })

  it('on Socket.IO: a stranger cannot join either namespace', async () => {
    for (const namespace of ['/clients', '/hosts'] as const) {
      await expect(connectTracker(tracker.url, namespace, stranger)).rejects.toMatchObject({
        code: 'not_admitted',
        message: expect.stringMatching(/private swarm .* ask the operator to add it/),
      })
    }
    const socket = await connectTracker(tracker.url, '/clients', member)
    socket.close()
  })

  it('on the gateway: 403 for an account whose key is not listed, or that has no key', async () => {
    const stranger = await get(`${tracker.url}/v1/models`, bearer(strangerKey))
    expect(stranger.status).toBe(403)
    expect(JSON.parse(stranger.text).error).toMatchObject({
      code: 'not_admitted',
      message: expect.stringMatching(/private swarm .* is not on its list/),
    })
    const keyless = await get(`${tracker.url}/v1/models`, bearer(keylessKey))
    expect(keyless.status).toBe(403)
    expect(JSON.parse(keyless.text).error.message).toMatch(/has no public key/)
    const chat = await fetch(`${tracker.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...bearer(strangerKey), 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'any', messages: [{ role: 'user', content: 'hi' }] }),
    })
    expect(chat.status).toBe(403)
    expect((await get(`${tracker.url}/v1/models`, bearer(memberKey))).status).toBe(200)
  })

  it('on the dashboards: members only, by API key or by a signed key', async () => {
    const host = `${tracker.url}/v1/dashboard/hosts/${HOST_ID}`
    expect((await get(`${tracker.url}/v1/dashboard/account`, bearer(strangerKey))).status).toBe(403)
    const anonymous = await get(host)
    expect(anonymous.status).toBe(401)
    expect(JSON.parse(anonymous.text).error.message).toMatch(/members only/)
    expect((await get(host, bearer(strangerKey))).status).toBe(403)
    expect((await get(host, await nodeAuthHeaders(tracker.url, stranger, DASHBOARD_SCOPE))).status).toBe(403)
    // A signature is good once, and for its scope only.
    const forged = await nodeAuthHeaders(tracker.url, member, '/clients')
    expect((await get(host, forged)).status).toBe(401)
    expect((await get(host, await nodeAuthHeaders(tracker.url, member, DASHBOARD_SCOPE))).status).toBe(200)
    expect((await get(host, bearer(memberKey))).status).toBe(200)
    // An open swarm's host dashboards stay open.
    expect((await get(`${open.url}/v1/dashboard/hosts/${HOST_ID}`)).status).toBe(200)
  })

  it('on BitTorrent: no announce, scrape or torrent for an address without an admitted connection', async () => {
    const refused = await get(announceUrl(tracker))
    expect(refused.text).toMatch(/^d14:failure reason\d+:this is a private swarm/)
    expect((await get(`${tracker.url}/scrape`)).text).toMatch(/failure reason.*private swarm/)
    expect((await get(`${tracker.url}/models/any.torrent`)).status).toBe(403)
    // With a member joined from this address, its BitTorrent client is answered.
    const socket = await connectTracker(tracker.url, '/hosts', member)
    try {
      const answered = await get(announceUrl(tracker))
      expect(answered.text).not.toMatch(/failure reason/)
      expect(answered.text).toMatch(/8:interval/)
    } finally {
      socket.close()
    }
    expect((await get(announceUrl(open))).text).toMatch(/8:interval/)
  })

  it('a key taken off the list is disconnected at once, and refused from then on', async () => {
    const socket = await connectTracker(tracker.url, '/clients', member)
    const dropped = new Promise<string>((resolve) => socket.once('disconnect', (reason) => resolve(reason)))
    tracker.admission.set([stranger.publicKey])
    try {
      expect(await dropped).toBe('io server disconnect')
      await expect(connectTracker(tracker.url, '/clients', member)).rejects.toMatchObject({ code: 'not_admitted' })
    } finally {
      tracker.admission.set([member.publicKey])
    }
  })
})

describe(`a private swarm serves its members end to end`, () => {
  let dir = ''
  let cleanup: () => Promise<void> = async () => {}
  let swarm: InProcessSwarm
  const member = NodeIdentity.generate()

  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
    swarm = await startSwarm(dir, STORIES_260K, [], { gateway: { adminToken: ADMIN } })
    // The swarm goes private before its host joins: the host (startSwarm's host-0) fetches its
    // artifacts through the private swarm's announces.
    const host = await NodeIdentity.loadOrCreate(join(dir, 'host-0'))
    swarm.tracker.admission.set([member.publicKey, host.publicKey])
    await swarm.addHost([0, swarm.manifest.nLayer])
  }, 180_000)
  afterAll(async () => {
    await swarm?.close()
    await cleanup()
  })

  it('a member chats through its client and the gateway; a stranger gets nothing', async () => {
    const { apiKey } = await createAccount(swarm.tracker.url, ADMIN, { public_key: member.publicKey })
    const client = await SwarmClient.connect(swarm.tracker.url, member)
    try {
      let tokens = 0
      for await (const _ of client.generate({
        modelId: swarm.manifest.modelId,
        prompt: [1, 400, 500],
        maxTokens: 4,
        stopAtEog: false,
      }))
        tokens++
      expect(tokens).toBe(4)
    } finally {
      client.close()
    }
    const chat = await fetch(`${swarm.tracker.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...bearer(apiKey), 'content-type': 'application/json' },
      body: JSON.stringify({
        model: swarm.manifest.modelId,
        messages: [{ role: 'user', content: 'Once upon a time' }],
        max_tokens: 4,
      }),
    })
    expect(chat.status, await chat.clone().text()).toBe(200)
    await expect(SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())).rejects.toMatchObject({
      code: 'not_admitted',
    })
  })

  it(
    'on the data plane: a stranger who knows a host’s address opens nothing there, not even with a member’s ' +
      'ticket',
    async () => {
      const stranger = NodeIdentity.generate()
      const memberSocket = await connectTracker(swarm.tracker.url, '/clients', member)
      const session = randomBytes(16).toString('hex')
      const maxTokens = 16
      try {
        const route = await callRpc(memberSocket, ClientToTracker, 'route.plan', {
          modelId: swarm.manifest.modelId,
          maxTokens,
          promptTokens: 3,
          session,
        })
        const hop = route.hops[0]
        if (hop?.endpoint == null || hop.ticket === undefined)
          throw new Error('the route has no direct hop with a ticket')
        const ws = new WebSocket(hop.endpoint)
        await new Promise((resolve, reject) => ws.once('open', resolve).once('error', reject))
        const ask = (frame: Uint8Array) =>
          new Promise<string>((resolve) => {
            ws.once('message', (data: Buffer) => resolve(readJson(decodeFrame(data), WireError).code))
            ws.send(frame)
          })
        try {
          const open = { modelId: swarm.manifest.modelId, blocks: hop.blocks, maxTokens }
          expect(await ask(jsonFrame('open', session, 0, open))).toBe('no_ticket')
          const stolen = { ...open, ticket: hop.ticket, signature: signOpen(stranger, hop.ticket, open) }
          expect(await ask(jsonFrame('open', session, 0, stolen))).toBe('bad_open_signature')
        } finally {
          ws.close()
        }
      } finally {
        memberSocket.close()
      }
    },
  )
})
