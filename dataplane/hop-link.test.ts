// A hop's WebSocket link against real servers on loopback: one whose link goes silent (ws's autoPong off
// stands in for a cut cable, which loopback cannot have: test/network/home-swarm.test.ts cuts a real link),
// and hosts whose certificate is or is not the one pinned.
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WebSocketServer } from 'ws'
import { hostCertificate } from '../host/network/certificate'
import { NodeIdentity } from '../identity/keys'
import { decodeFrame, errorFrame, jsonFrame } from '../protocol'
import { scratchDir } from '../test/models'
import { LINK_SILENCE_MS, WebSocketHopLink } from './hop-link'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
const closers: (() => void)[] = []

/**
 * A WebSocket server on a free loopback port that echoes frames (or swallows them), over TLS when given a certificate.
 */
async function server({
  echo,
  pong,
  tls,
  answer,
}: {
  echo: boolean
  pong: boolean
  tls?: { key: string; cert: string }
  /** Answers each frame itself instead (echo is then ignored). */
  answer?: (send: (bytes: Uint8Array) => void, data: Buffer) => void
}): Promise<{ url: string; received: () => number }> {
  let received = 0
  const https: Server | undefined = tls === undefined ? undefined : createServer(tls)
  const wss =
    https === undefined
      ? new WebSocketServer({ port: 0, host: '127.0.0.1', autoPong: pong })
      : new WebSocketServer({ server: https, autoPong: pong })
  wss.on('connection', (socket) =>
    socket.on('message', (data) => {
      received++
      if (answer !== undefined) answer((bytes) => socket.send(bytes), data as Buffer)
      else if (echo) socket.send(data as Buffer)
    }),
  )
  if (https !== undefined) await new Promise<void>((resolve) => https.listen(0, '127.0.0.1', resolve))
  else await new Promise<void>((resolve) => wss.once('listening', resolve))
  closers.push(() => {
    for (const c of wss.clients) c.terminate()
    wss.close()
    https?.close()
  })
  const port = ((https ?? wss).address() as AddressInfo).port
  return { url: `${https === undefined ? 'ws' : 'wss'}://127.0.0.1:${port}/`, received: () => received }
}

const frame = (step: number) => jsonFrame('forward', 'ab'.repeat(16), step, {})

describe('a hop link', () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
  })
  afterAll(async () => {
    for (const close of closers) close()
    await cleanup()
  })

  it(
    'gives up on a host that sends nothing, not even a pong, for LINK_SILENCE_MS while a step waits, long before ' +
      'the step’s timeout',
    async () => {
      const { url } = await server({ echo: false, pong: false })
      const link = await WebSocketHopLink.connect('silent', url, { timeoutMs: 120_000 })
      const started = performance.now()
      await expect(link.request(frame(1))).rejects.toMatchObject({
        code: 'hop_unreachable',
        message: expect.stringMatching(/sent nothing, not even a pong/),
      })
      const waited = performance.now() - started
      expect(waited).toBeGreaterThanOrEqual(LINK_SILENCE_MS)
      expect(waited).toBeLessThan(60_000)
      link.close()
    },
  )

  it('keeps waiting on a host that answers pings while it computes', async () => {
    const { url } = await server({ echo: false, pong: true })
    const link = await WebSocketHopLink.connect('busy', url, { timeoutMs: LINK_SILENCE_MS + 2_000 })
    // the step's own timeout ends it, not the liveness watch
    await expect(link.request(frame(1))).rejects.toMatchObject({ code: 'hop_timeout' })
    link.close()
  })

  it(
    'talks to a wss:// host that presents the pinned ' + 'certificate, and sends nothing to one that presents another',
    async () => {
      const identity = NodeIdentity.generate()
      const pinned = await hostCertificate(`${dir}/pinned`, identity)
      const good = await server({ echo: true, pong: true, tls: pinned })
      const link = await WebSocketHopLink.connect('pinned', good.url, { fingerprint: pinned.fingerprint })
      expect((await link.request(frame(2))).step).toBe(2)
      link.close()
      const impostor = await server({ echo: true, pong: true, tls: await hostCertificate(`${dir}/impostor`, identity) })
      await expect(
        WebSocketHopLink.connect('pinned', impostor.url, { fingerprint: pinned.fingerprint }),
      ).rejects.toMatchObject({
        code: 'hop_unreachable',
        message: expect.stringMatching(/not the pinned/),
      })
      expect(impostor.received()).toBe(0)
    },
  )

  it("takes a hop's pushed refusal only as a push: a fetch of the same step gets its own answer", async () => {
    // the hop pushes "my successor refused step 7" just before it answers the client's fetch of step 7 (both carry
    // session and step 7): the client found the successor gone at the same moment and asked for what was forwarded
    const session = 'ab'.repeat(16)
    const { url } = await server({
      echo: false,
      pong: true,
      answer: (send, data) => {
        const asked = decodeFrame(data)
        send(errorFrame(session, asked.step, { code: 'forward_refused', message: 'the next hop is gone' }))
        send(jsonFrame('hidden', session, asked.step, { fetched: true }))
      },
    })
    const link = await WebSocketHopLink.connect('forwarding', url)
    const fetched = await link.request(jsonFrame('fetch', session, 7, { step: 7 }))
    expect(fetched.kind).toBe('hidden')
    // and one waiting for the push beside a request of the same step gets the refusal, the request its answer
    const trouble = link.expect(session, 8)
    const again = await link.request(jsonFrame('fetch', session, 8, { step: 8 }))
    expect(again.kind).toBe('hidden')
    await expect(trouble.answer).rejects.toMatchObject({ code: 'forward_refused' })
    link.close()
  })
})
