import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  type AppInput,
  type AppMethod,
  type AppOutput,
  type Conversation,
  MAX_CONVERSATION_CHARS,
  readAppReply,
} from '../../../protocol'
import { scratchDir } from '../../../test/models'
import { AppBackend } from '../backend'
import { CONVERSATIONS_DIR } from './conversations'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let backend: AppBackend

const start = () => AppBackend.start({ dataDir: dir, trackerUrl: null, defaultModels: [], threads: 1 })

async function call<M extends AppMethod>(method: M, input: AppInput<M>): Promise<AppOutput<M>> {
  return readAppReply(method, await backend.call(method, input))
}

const story: Conversation = {
  id: 'c0ffee01',
  title: 'Tell me a story about a cat.',
  modelId: 'stories260k',
  createdAt: 1_000,
  updatedAt: 2_000,
  messages: [
    { id: 'u1', role: 'user', content: 'Tell me a story about a cat.', createdAt: 1_000 },
    {
      id: 'a1',
      role: 'assistant',
      content: ' Once upon a time, there was a cat.',
      createdAt: 1_001,
      status: 'done',
      modelId: 'stories260k',
      route: [{ hostId: '0123456789abcdef0123', blocks: [0, 5], medianMs: 1.5 }],
      summary: {
        chatId: 'c0ffee01',
        promptTokens: 12,
        completionTokens: 9,
        finishReason: 'stop',
        tokensPerSecond: 40,
        route: [{ hostId: '0123456789abcdef0123', blocks: [0, 5], medianMs: 1.5 }],
        chargedMicro: 0,
      },
    },
  ],
}
const other: Conversation = {
  ...story,
  id: 'feed02',
  title: 'Another',
  createdAt: 3_000,
  updatedAt: 3_000,
  messages: [],
}

describe('conversations kept by the backend', () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-conversations-'))
    backend = await start()
  })
  afterAll(async () => {
    await backend?.close()
    await cleanup()
  })

  it(
    'keeps conversations in the data dir across a restart, ' + 'newest first, and forgets a deleted one for good',
    async () => {
      expect(await call('conversations.list', {})).toEqual({ conversations: [], unreadable: [] })
      await call('conversations.save', { conversation: story })
      await call('conversations.save', { conversation: other })
      const longer = {
        ...story,
        updatedAt: 4_000,
        messages: [...story.messages, { id: 'u2', role: 'user' as const, content: 'And then?', createdAt: 4_000 }],
      }
      await call('conversations.save', { conversation: longer })
      await backend.close()
      backend = await start()
      expect(await call('conversations.list', {})).toEqual({ conversations: [longer, other], unreadable: [] })

      await call('conversations.delete', { id: story.id })
      // Deleting one that is gone already is no error.
      await call('conversations.delete', { id: story.id })
      expect((await call('conversations.list', {})).conversations).toEqual([other])
      expect(await readdir(join(dir, CONVERSATIONS_DIR))).toEqual([`${other.id}.json`])
    },
  )

  it(
    'refuses a conversation over the size bound or with ' + 'an id that is not a chat id, and keeps what it had',
    async () => {
      const before = await call('conversations.list', {})
      const huge = {
        ...other,
        messages: [{ id: 'u1', role: 'user' as const, content: 'x'.repeat(MAX_CONVERSATION_CHARS - 10), createdAt: 0 }],
      }
      const tooBig = await backend.call('conversations.save', { conversation: huge })
      expect(tooBig).toMatchObject({
        ok: false,
        error: { code: 'bad_request', message: expect.stringMatching(/start a new chat/) },
      })
      const badId = await backend.call('conversations.save', { conversation: { ...other, id: '../settings' } })
      expect(badId).toMatchObject({
        ok: false,
        error: { code: 'bad_request', message: expect.stringMatching(/chat id/) },
      })
      expect(await backend.call('conversations.delete', { id: '../settings' })).toMatchObject({
        ok: false,
        error: { code: 'bad_request' },
      })
      expect(await call('conversations.list', {})).toEqual(before)
      expect(JSON.parse(await readFile(join(dir, CONVERSATIONS_DIR, `${other.id}.json`), 'utf8'))).toEqual(other)
    },
  )

  it(
    'keeps aside a conversation file it cannot read, lists ' + 'the others and says which file and where it went',
    async () => {
      const path = join(dir, CONVERSATIONS_DIR, 'broken.json')
      await writeFile(path, '{"id": "broken", "title": ')
      const { conversations, unreadable } = await call('conversations.list', {})
      expect(conversations).toEqual([other])
      expect(unreadable).toEqual([
        expect.stringMatching(
          new RegExp(`^${path} is not JSON .*; it was kept as ${path}\\.corrupt-\\S+ and left out of the chat list$`),
        ),
      ])
      const files = await readdir(join(dir, CONVERSATIONS_DIR))
      expect(files.filter((f) => f.startsWith('broken.json.corrupt-'))).toHaveLength(1)
      expect((await call('conversations.list', {})).unreadable).toEqual([])
    },
  )

  it(
    'keeps system prompt presets by name across a restart: saved, replaced by name, deleted; a bad one ' + 'refused',
    async () => {
      expect(await call('conversations.presets', {})).toEqual({ presets: [] })
      const pirate = { name: 'Pirate', prompt: 'Answer as a pirate.' }
      await call('conversations.savePreset', { preset: { name: 'Tutor', prompt: 'Explain step by step.' } })
      await call('conversations.savePreset', { preset: pirate })
      const replaced = await call('conversations.savePreset', { preset: { ...pirate, prompt: 'Arr.' } })
      expect(replaced.presets.map((p) => [p.name, p.prompt])).toEqual([
        ['Pirate', 'Arr.'],
        ['Tutor', 'Explain step by step.'],
      ])
      await backend.close()
      backend = await start()
      expect(await call('conversations.presets', {})).toEqual(replaced)
      expect((await call('conversations.deletePreset', { name: 'Pirate' })).presets.map((p) => p.name)).toEqual([
        'Tutor',
      ])
      const unnamed = await backend.call('conversations.savePreset', { preset: { name: '  ', prompt: 'x' } })
      expect(unnamed).toMatchObject({
        ok: false,
        error: { code: 'bad_request', message: expect.stringMatching(/name/) },
      })
      expect((await call('conversations.presets', {})).presets).toHaveLength(1)
    },
  )
})
