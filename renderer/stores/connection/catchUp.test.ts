import { describe, expect, it } from 'vitest'
import { someEarnings } from '../../../test/renderer/earnings-fixtures'
import { fakeBridge } from '../../../test/renderer/fake-bridge'
import { downloading, serving, tinyModel } from '../../../test/renderer/hosting-fixtures'
import { createChatStore } from '../chat/store'
import { createEarningsStore } from '../earnings/store'
import { createHostingStore } from '../hosting/store'
import { catchUpOnReconnect } from './catchUp'
import { createConnectionStore } from './store'

function setup() {
  const bridge = fakeBridge({
    'models.list': () => ({ models: [tinyModel] }),
    'chat.send': ({ chatId }) => ({ chatId }),
    'chat.count': () => ({ promptTokens: 5, contextLength: 2048 }),
    'chat.stop': () => ({}),
    'hosting.status': () => serving,
    'earnings.get': () => someEarnings,
  })
  let n = 0
  const stores = {
    connection: createConnectionStore(bridge),
    chat: createChatStore(bridge, { newId: () => `id${++n}`, now: () => n }),
    hosting: createHostingStore(bridge),
    earnings: createEarningsStore(bridge),
  }
  stores.chat.getState().subscribe()
  stores.hosting.getState().subscribe()
  catchUpOnReconnect(stores)
  return { bridge, stores }
}

const lastAnswer = (stores: ReturnType<typeof setup>['stores'], chatId: string) =>
  stores.chat
    .getState()
    .conversations.find((c) => c.id === chatId)
    ?.messages.at(-1)

describe('catching up after the connection drops', () => {
  it('ends an answer whose chat.done was lost with the outage, so the chat is not stuck busy', async () => {
    const { bridge, stores } = setup()
    await stores.chat.getState().loadModels()
    const chatId = stores.chat.getState().newConversation()
    await stores.chat.getState().send('Once upon a time')
    bridge.emit('chat.token', { chatId, text: 'there', token: 0 })
    bridge.setConnection('reconnecting')
    expect(lastAnswer(stores, chatId)?.status).toBe('streaming')
    bridge.setConnection('open')
    expect(lastAnswer(stores, chatId)).toMatchObject({
      content: 'there',
      status: 'error',
      error: {
        message: expect.stringContaining(
          'connection to the Neuron host dropped while this answer was streaming; regenerate',
        ),
      },
    })
    expect(bridge.calls).toContainEqual({ method: 'chat.stop', input: { chatId } })
    await stores.chat.getState().regenerate()
    expect(stores.chat.getState().composerError).toBeNull()
    expect(bridge.calls.filter((c) => c.method === 'chat.send')).toHaveLength(2)
    expect(lastAnswer(stores, chatId)?.status).toBe('streaming')
  })

  it('leaves alone an answer asked for while the connection was down: its events still come', async () => {
    const { bridge, stores } = setup()
    await stores.chat.getState().loadModels()
    const before = stores.chat.getState().newConversation()
    await stores.chat.getState().send('Hi')
    bridge.setConnection('reconnecting')
    const during = stores.chat.getState().newConversation()
    await stores.chat.getState().send('Hello')
    bridge.setConnection('open')
    expect(lastAnswer(stores, before)?.status).toBe('error')
    expect(lastAnswer(stores, during)?.status).toBe('streaming')
    expect(bridge.calls).not.toContainEqual({ method: 'chat.stop', input: { chatId: during } })
  })

  it(
    'asks again for the hosting status, the earnings and ' + 'the tracker link whose pushes may have been missed',
    async () => {
      const { bridge, stores } = setup()
      await stores.earnings.getState().load()
      bridge.emit('hosting.status', downloading)
      bridge.setConnection('reconnecting')
      bridge.setConnection('open')
      await new Promise((resolve) => setTimeout(resolve, 0))
      expect(bridge.calls.map((c) => c.method)).toEqual([
        'swarm.status',
        'earnings.get',
        'hosting.status',
        'earnings.get',
        'swarm.status',
      ])
      expect(stores.hosting.getState().status?.phase).toBe('serving')
    },
  )
})
