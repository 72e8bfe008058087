// The PCP pinhole client against a hostile router: a UDP socket on ::1 that answers what a broken or lying router
// might (too long, too short, another version, another nonce, a refusal, an endless lifetime, nothing). Each is refused
// with what was wrong, before anything in it is believed. (Against real miniupnpd: test/network/ipv6-pinhole.test.ts.)
import { createSocket, type Socket } from 'node:dgram'
import { afterEach, describe, expect, it } from 'vitest'
import { Pinholes } from './pinhole'
import { decodeMapAnswer, encodeMapRequest, pinholeNonce, requestPinhole } from './pinhole-pcp'

type Answer = (request: Buffer) => Buffer | Buffer[] | undefined
const routers: Socket[] = []

/** A fake router on [::1]: answers each request with `answer(request)`; resolves its port and what it was sent. */
async function router(answer: Answer): Promise<{ port: number; got: Buffer[] }> {
  const socket = createSocket('udp6')
  routers.push(socket)
  const got: Buffer[] = []
  socket.on('message', (m, from) => {
    got.push(m)
    const out = answer(m)
    for (const b of out === undefined ? [] : Array.isArray(out) ? out : [out]) socket.send(b, from.port, from.address)
  })
  await new Promise<void>((resolve) => socket.bind(0, '::1', resolve))
  return { port: socket.address().port, got }
}

/** What miniupnpd answers a MAP for an IPv6 address: the request echoed as a response, success, the lifetime asked. */
function grant(request: Buffer, edit: (b: Buffer) => void = () => {}): Buffer {
  const out = Buffer.from(request)
  out[1] = 0x81
  out[3] = 0
  out.writeUInt32BE(42, 8)
  out.fill(0, 12, 24)
  edit(out)
  return out
}

const ask = (port: number, timeoutMs = 1_000) =>
  requestPinhole({
    router: '::1',
    routerPort: port,
    internal: '::1',
    port: 7300,
    lifetimeS: 600,
    nonce: pinholeNonce(),
    timeoutMs,
  })

afterEach(() => {
  for (const s of routers.splice(0)) s.close()
})

describe('the PCP pinhole client', () => {
  it('opens a pinhole: a 60-byte MAP from the internal address, the grant read back', async () => {
    const r = await router((q) => grant(q))
    expect(await ask(r.port)).toEqual({ externalAddress: '::1', externalPort: 7300, lifetimeS: 600, epochS: 42 })
    const sent = r.got[0] as Buffer
    expect(sent.byteLength).toBe(60)
    expect([sent[0], sent[1], sent[36], sent.readUInt16BE(40)]).toEqual([2, 1, 6, 7300])
  })

  it('refuses an oversized answer (past the 1100 bytes of RFC 6887) before reading it', async () => {
    const r = await router((q) => Buffer.concat([grant(q), Buffer.alloc(4000)]))
    await expect(ask(r.port)).rejects.toThrow(/4060 bytes; one is at most 1100/)
  })

  it('refuses a truncated answer and one whose length is not in fours', async () => {
    const short = await router((q) => grant(q).subarray(0, 24))
    await expect(ask(short.port)).rejects.toThrow(/24 bytes; a MAP answer is 60 or more/)
    const odd = await router((q) => Buffer.concat([grant(q), Buffer.alloc(3)]))
    await expect(ask(odd.port)).rejects.toThrow(/63 bytes/)
  })

  it('refuses another version, another opcode, another protocol, a lifetime past a day', async () => {
    const cases: Array<[(b: Buffer) => void, RegExp]> = [
      [(b) => (b[0] = 1), /another PCP version/],
      [(b) => (b[1] = 0x82), /not a MAP response/],
      [(b) => (b[36] = 17), /another protocol/],
      [(b) => b.writeUInt32BE(0xffffffff, 4), /malformed/],
    ]
    for (const [edit, error] of cases) {
      const r = await router((q) => grant(q, edit))
      await expect(ask(r.port)).rejects.toThrow(error)
    }
  })

  it('refuses an answer to another request (another nonce or port): a LAN peer cannot slip in a grant', async () => {
    const nonce = await router((q) => grant(q, (b) => b.fill(7, 24, 36)))
    await expect(ask(nonce.port)).rejects.toThrow(/another request/)
    const port = await router((q) => grant(q, (b) => b.writeUInt16BE(22, 40)))
    await expect(ask(port.port)).rejects.toThrow(/another request/)
  })

  it('says what the router refused, by its PCP result', async () => {
    const r = await router((q) => grant(q, (b) => (b[3] = 2)))
    await expect(ask(r.port)).rejects.toThrow(/refused the pinhole: PCP result 2 NOT_AUTHORIZED/)
    const none = await router((q) => grant(q, (b) => b.writeUInt32BE(0, 4)))
    await expect(ask(none.port)).rejects.toThrow(/granted no lifetime/)
  })

  it('ignores datagrams from anyone but the router; gives up after its timeout when the router is silent', async () => {
    // another socket on the LAN answers first, refusing; the router's grant that follows is the one believed
    const spoofer = createSocket('udp6')
    routers.push(spoofer)
    await new Promise<void>((resolve) => spoofer.bind(0, '::1', resolve))
    const r = await router(() => undefined)
    const honest = routers.at(-1) as Socket
    honest.removeAllListeners('message')
    honest.on('message', (q, from) => {
      spoofer.send(
        grant(q, (b) => (b[3] = 2)),
        from.port,
        from.address,
      )
      setTimeout(() => honest.send(grant(q), from.port, from.address), 50)
    })
    expect((await ask(r.port)).externalPort).toBe(7300)
    const silent = await router(() => undefined)
    await expect(ask(silent.port, 600)).rejects.toThrow(/gave no PCP answer within 600 ms/)
    // retransmits within the timeout (250 ms, then 750 ms): at least two tries, a bounded number
    expect(silent.got.length).toBeGreaterThanOrEqual(2)
    expect(silent.got.length).toBeLessThanOrEqual(3)
  })

  it('decodes only what it asked: a request round-trips through the codec', () => {
    const request = { internal: '2001:db8:4::10', port: 7300, lifetimeS: 600, nonce: pinholeNonce() }
    const echoed = grant(encodeMapRequest(request))
    expect(decodeMapAnswer(echoed, request).externalAddress).toBe('2001:db8:4::10')
  })
})

describe('a host’s pinholes', () => {
  it('opens one per address, says when they change, and closes them with the nonce that opened them', async () => {
    let refuse = false
    const r = await router((q) =>
      grant(q, (b) => {
        if (refuse && b.readUInt32BE(4) > 0) b[3] = 8
      }),
    )
    const changes: string[] = []
    const pinholes = new Pinholes(7300, {
      addresses: () => ['::1'],
      router: '::1',
      routerPort: r.port,
      refreshMs: 60_000,
      onChange: (open) => changes.push(JSON.stringify(open)),
    })
    await pinholes.start()
    expect(pinholes.open).toEqual([{ address: '::1', port: 7300 }])
    refuse = true
    await pinholes.refresh()
    expect(pinholes.open).toEqual([])
    expect(changes).toEqual(['[{"address":"::1","port":7300}]', '[]'])
    refuse = false
    await pinholes.refresh()
    await pinholes.close()
    const last = r.got.at(-1) as Buffer
    expect(last.readUInt32BE(4)).toBe(0)
    expect(last.subarray(24, 36)).toEqual((r.got[0] as Buffer).subarray(24, 36))
  })
})
