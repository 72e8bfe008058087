import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import type { HostingStatus } from '../../protocol/app'
import { createSocketBridge, type SocketLike } from './socketBridge'

/** A mock of the browser WebSocket: records what the bridge sends and lets the test play the backend. */
class FakeWebSocket implements SocketLike {
  readyState = 0
  sent: unknown[] = []
  onopen: SocketLike['onopen'] = null
  onclose: SocketLike['onclose'] = null
  onerror: SocketLike['onerror'] = null
  onmessage: SocketLike['onmessage'] = null
  send(data: string) {
    this.sent.push(JSON.parse(data))
  }
  close() {
    this.drop()
  }
  accept() {
    this.readyState = 1
    this.onopen?.({})
  }
  drop() {
    this.readyState = 3
    this.onclose?.({})
  }
  push(frame: unknown) {
    this.onmessage?.({ data: typeof frame === 'string' ? frame : JSON.stringify(frame) })
  }
}

const idle: HostingStatus = { phase: 'idle', modelId: null, blocks: null, artifacts: [], serving: null, error: null }

function setup() {
  const sockets: FakeWebSocket[] = []
  const warnings: string[] = []
  const bridge = createSocketBridge({
    url: 'ws://127.0.0.1:7777/api',
    connect: () => {
      const socket = new FakeWebSocket()
      sockets.push(socket)
      return socket
    },
    warn: (message) => warnings.push(message),
  })
  const last = () => {
    const socket = sockets.at(-1)
    if (socket === undefined) throw new Error('no socket was opened')
    return socket
  }
  return { bridge, sockets, warnings, last }
}

describe('the WebSocket bridge against a fake browser WebSocket', () => {
  beforeEach(() => vi.useFakeTimers())
  afterEach(() => vi.useRealTimers())

  it('sends a call frame once the socket opens and resolves with the parsed reply', async () => {
    const { bridge, last } = setup()
    const answer = bridge.call('hosting.status', {})
    expect(last().sent).toEqual([])
    last().accept()
    expect(last().sent).toEqual([{ kind: 'call', id: 1, method: 'hosting.status', input: {} }])
    last().push({ kind: 'reply', id: 1, ok: true, value: idle })
    await expect(answer).resolves.toEqual(idle)
  })

  it("rejects with the backend's error code and message", async () => {
    const { bridge, last } = setup()
    last().accept()
    const answer = bridge.call('models.add', { path: '/tmp/notes.txt' })
    last().push({
      kind: 'reply',
      id: 1,
      ok: false,
      error: { code: 'not_gguf', message: '/tmp/notes.txt is not a GGUF file' },
    })
    await expect(answer).rejects.toMatchObject({ code: 'not_gguf', message: '/tmp/notes.txt is not a GGUF file' })
  })

  it('rejects a reply whose value breaks the contract instead of handing it to the screen', async () => {
    const { bridge, last } = setup()
    last().accept()
    const answer = bridge.call('hosting.status', {})
    last().push({ kind: 'reply', id: 1, ok: true, value: { phase: 'dancing' } })
    await expect(answer).rejects.toMatchObject({ code: 'bad_response' })
  })

  it('delivers valid events to listeners and drops malformed ones with a warning', () => {
    const { bridge, last, warnings } = setup()
    last().accept()
    const phases: string[] = []
    bridge.on('hosting.status', (status) => phases.push(status.phase))
    last().push({ kind: 'event', event: 'hosting.status', data: { ...idle, phase: 'downloading' } })
    last().push({ kind: 'event', event: 'hosting.status', data: { phase: 'nope' } })
    last().push({ kind: 'event', event: 'no.such.event', data: {} })
    last().push('{not json')
    expect(phases).toEqual(['downloading'])
    expect(warnings).toHaveLength(3)
  })

  it('rejects pending calls with a clear error when the socket closes, then reconnects with backoff', async () => {
    const { bridge, sockets, last } = setup()
    const states: string[] = []
    bridge.onConnection((state) => states.push(state))
    last().accept()
    const answer = bridge.call('settings.get', {})
    last().drop()
    await expect(answer).rejects.toMatchObject({
      code: 'host_unreachable',
      message: expect.stringContaining('settings.get'),
    })
    expect(bridge.connection()).toBe('reconnecting')
    expect(sockets).toHaveLength(1)
    vi.advanceTimersByTime(250)
    expect(sockets).toHaveLength(2)
    last().drop()
    vi.advanceTimersByTime(250)
    expect(sockets).toHaveLength(2)
    vi.advanceTimersByTime(250)
    expect(sockets).toHaveLength(3)
    last().accept()
    expect(states).toEqual(['open', 'reconnecting', 'open'])
  })

  it('keeps ids unique so two replies in reverse order reach the right callers', async () => {
    const { bridge, last } = setup()
    last().accept()
    const first = bridge.call('chat.stop', { chatId: 'a' })
    const second = bridge.call('hosting.status', {})
    last().push({ kind: 'reply', id: 2, ok: true, value: idle })
    last().push({ kind: 'reply', id: 1, ok: true, value: {} })
    await expect(second).resolves.toMatchObject({ phase: 'idle' })
    await expect(first).resolves.toEqual({})
  })
})
