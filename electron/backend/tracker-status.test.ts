import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { AppEventData, TrackerLinkStatus, WireError } from '../../protocol'
import { backendCalls } from '../../test/backend-calls'
import { DelayProxy } from '../../test/delay-proxy'
import { scratchDir } from '../../test/models'
import { Tracker } from '../../tracker/server'
import { AppBackend } from './backend'

/** The bound: the sidebar shows a dead tracker within 5 s. */
const SHOWN_WITHIN_MS = 5000

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let tracker: Tracker
let proxy: DelayProxy
let backend: AppBackend
const pushed: TrackerLinkStatus[] = []
const chatErrors: AppEventData<'chat.error'>[] = []

const { call, failure } = backendCalls(() => backend)

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

/** The chat.error that ended `chatId`, within `timeoutMs`. */
async function endedWith(chatId: string, timeoutMs: number): Promise<WireError | undefined> {
  await until('the chat ended', () => chatErrors.some((e) => e.chatId === chatId), Math.max(0, timeoutMs))
  return chatErrors.find((e) => e.chatId === chatId)?.error
}

const state = async () => (await call('swarm.status', {})).state
const chat = {
  chatId: 'dead-tracker',
  modelId: 'stories260k',
  messages: [{ role: 'user' as const, content: 'Hi' }],
  maxTokens: 4,
}

describe('the backend’s link to its tracker, told as it is', () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-link-'))
    tracker = await Tracker.start({ dbPath: join(dir, 'tracker.sqlite'), host: '127.0.0.1', port: 0 })
    // The backend reaches the tracker through a proxy that can stall:
    // a tracker that stops answering without closing anything.
    proxy = await DelayProxy.start(tracker.port)
    backend = await AppBackend.start({
      dataDir: join(dir, 'app'),
      trackerUrl: `http://127.0.0.1:${proxy.port}`,
      defaultModels: [],
      threads: 1,
      mdns: false,
    })
    backend.onEvent((event, data) => {
      if (event === 'swarm.status') pushed.push(data as TrackerLinkStatus)
      if (event === 'chat.error') chatErrors.push(data as AppEventData<'chat.error'>)
    })
    await call('settings.consent', { trackerUrl: backend.trackerUrl })
  })
  afterAll(async () => {
    await backend?.close()
    await proxy?.close()
    await tracker?.close()
    await cleanup()
  })

  it(
    'says a tracker that stopped answering is unreachable within 5 s, fails a chat at once saying why, and joins ' +
      'it again',
    async () => {
      expect(await call('swarm.status', {})).toMatchObject({
        state: 'connected',
        problem: null,
        trackerUrl: backend.trackerUrl,
      })
      proxy.delayMs = 10 * 60_000
      await until('the tracker shown unreachable', async () => (await state()) === 'unreachable', SHOWN_WITHIN_MS)
      expect((await call('swarm.status', {})).problem).toMatch(/no answer to a ping/)
      expect(pushed.at(-1)).toMatchObject({ state: 'unreachable' })
      const error = await failure('chat.send', chat)
      expect(error.code).toBe('tracker_unreachable')
      expect(error.message).toMatch(
        new RegExp(
          `^the tracker at ${backend.trackerUrl} stopped answering just now \\(no answer to a ping within 3 s\\)`,
        ),
      )
      // Calls that need the tracker say so too, rather than waiting out their timeouts.
      expect((await failure('swarm.get', {})).code).toBe('tracker_unreachable')
      proxy.delayMs = 0
      // Joined again with a backoff that grows to 30 s, each try given 10 s: a generous wait.
      await until('the tracker joined again', async () => (await state()) === 'connected', 90_000)
      expect(pushed.at(-1)).toMatchObject({ state: 'connected', problem: null })
      expect((await call('swarm.get', {})).hosts).toEqual([])
    },
  )

  it(
    'ends within 5 s, saying why, a chat asked just as the tracker stopped answering (it waited out 30 s timeouts ' +
      'before)',
    async () => {
      proxy.delayMs = 10 * 60_000
      // Before the heartbeat has told: the chat goes ahead, and its first call to the tracker gets no answer. It ends
      // in the reply (the answer's first steps run before it) or in a chat.error, whichever the runner reaches.
      const started = Date.now()
      const reply = await backend.call('chat.send', { ...chat, chatId: 'just-stalled' })
      const error = reply.ok ? await endedWith('just-stalled', SHOWN_WITHIN_MS - (Date.now() - started)) : reply.error
      expect(error).toMatchObject({ code: 'tracker_unreachable', message: expect.stringContaining('lost the tracker') })
      proxy.delayMs = 0
      await until('the tracker joined again', async () => (await state()) === 'connected', 90_000)
    },
  )

  it('says a killed tracker is unreachable within 5 s, and a chat fails saying why', async () => {
    // What the backend sees of a killed process: its connections reset and its port closed.
    await proxy.close()
    await until('the tracker shown unreachable', async () => (await state()) === 'unreachable', SHOWN_WITHIN_MS)
    expect((await failure('chat.send', chat)).code).toBe('tracker_unreachable')
  })
})
