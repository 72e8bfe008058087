// IdleLinks against real WebSocket links to a real server on loopback: a link kept between sessions is handed to the
// next session to the same successor, one the far side closed is not, and the pool stays within its bounds however
// many successors a client names.
import type { AddressInfo } from 'node:net'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import { type WebSocket, WebSocketServer } from 'ws'
import { WebSocketHopLink } from './hop-link'
import { IdleLinks } from './idle-links'

let server: WebSocketServer
let url = ''
/** The server's side of each connection, newest last. */
const accepted: WebSocket[] = []

const connect = () => WebSocketHopLink.connect('next-hop', url)
const closedSoon = (link: WebSocketHopLink) => vi.waitFor(() => expect(link.open).toBe(false), { timeout: 2_000 })

describe('IdleLinks (real links to a WebSocket server on loopback)', () => {
  beforeAll(async () => {
    server = new WebSocketServer({ port: 0, host: '127.0.0.1' })
    server.on('connection', (socket) => accepted.push(socket))
    await new Promise((resolve) => server.once('listening', resolve))
    url = `ws://127.0.0.1:${(server.address() as AddressInfo).port}/`
  })
  afterAll(async () => {
    for (const s of accepted) s.terminate()
    await new Promise((resolve) => server.close(resolve))
  })

  it('hands a parked link to the next session to the same successor, once, and none to another successor', async () => {
    const idle = new IdleLinks()
    const link = await connect()
    idle.park('a', link)
    expect(idle.take('b')).toBeUndefined()
    expect(idle.take('a')).toBe(link)
    expect(idle.take('a')).toBeUndefined()
    expect(link.open).toBe(true)
    idle.close()
    link.close()
  })

  it('does not hand out a link its successor closed while it waited, and closes it', async () => {
    const idle = new IdleLinks()
    const link = await connect()
    idle.park('a', link)
    accepted.at(-1)?.close()
    await closedSoon(link)
    expect(idle.take('a')).toBeUndefined()
    expect(idle.size).toBe(0)
  })

  it('keeps a bounded number per successor, the newest, and closes the one that gives way', async () => {
    const idle = new IdleLinks(60_000, 2, 32)
    const [l1, l2, l3] = [await connect(), await connect(), await connect()]
    for (const l of [l1, l2, l3]) idle.park('a', l as WebSocketHopLink)
    expect(idle.size).toBe(2)
    await closedSoon(l1 as WebSocketHopLink)
    expect(idle.take('a')).toBe(l3)
    expect(idle.take('a')).toBe(l2)
    idle.close()
    l2?.close()
    l3?.close()
  })

  it('a client naming many successors of its own cannot grow the pool past its bound', async () => {
    const idle = new IdleLinks(60_000, 4, 3)
    const links = await Promise.all(Array.from({ length: 6 }, connect))
    links.forEach((l, i) => {
      idle.park(`successor-${i}`, l)
    })
    expect(idle.size).toBe(3)
    for (const l of links.slice(3)) await closedSoon(l)
    expect(links.slice(0, 3).every((l) => l.open)).toBe(true)
    idle.close()
    for (const l of links.slice(0, 3)) await closedSoon(l)
  })

  it('closes a link no session took within its keep time, and every link when the host stops', async () => {
    const idle = new IdleLinks(100)
    const expiring = await connect()
    idle.park('a', expiring)
    await closedSoon(expiring)
    expect(idle.take('a')).toBeUndefined()
    const kept = new IdleLinks()
    const link = await connect()
    kept.park('a', link)
    kept.close()
    await closedSoon(link)
    const late = await connect()
    kept.park('a', late) // a session forgotten after the stop: closed, not kept
    await closedSoon(late)
    expect(kept.size).toBe(0)
  })
})
