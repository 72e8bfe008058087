// The behaviours of `window.neuron`, run against whatever exposed it: the preload source, or the built
// bundle evaluated with nothing but the electron mock (preload.test.ts runs both).
import { afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { APP_PAGE, ipcMain, mainWorld, webContents } from '../electron/__mocks__/electron'
import { wireAppIpc } from '../electron/main/ipc'
import type { NeuronBridge } from '../protocol/app'
import { NeuronError } from '../protocol/errors'
import { type FakeBackend, fakeBackend, servingStatus } from './fake-backend'

export function describeExposedBridge(label: string, expose: () => unknown): void {
  describe(label, () => {
    let neuron: NeuronBridge
    let backend: FakeBackend
    let unwire = () => {}
    const wire = (b: FakeBackend) => {
      backend = b
      unwire = wireAppIpc(ipcMain, backend, () => webContents, APP_PAGE)
    }

    beforeAll(async () => {
      await expose()
      neuron = mainWorld.neuron as NeuronBridge
    })
    afterEach(() => {
      unwire()
      unwire = () => {}
      vi.restoreAllMocks()
    })

    it('exposes exactly one key, neuron, with exactly call and on, both functions', () => {
      expect(Object.keys(mainWorld)).toEqual(['neuron'])
      expect(Object.keys(neuron).sort()).toEqual(['call', 'on'])
      expect(typeof neuron.call).toBe('function')
      expect(typeof neuron.on).toBe('function')
    })

    it('call forwards the method and input on IPC_CALL and resolves with the parsed value', async () => {
      wire(fakeBackend({ 'hosting.start': () => servingStatus }))
      const status = await neuron.call('hosting.start', { modelId: 'stories260k', blocks: [0, 5] })
      expect(backend.calls).toEqual([{ method: 'hosting.start', input: { modelId: 'stories260k', blocks: [0, 5] } }])
      expect(status).toEqual(servingStatus)
    })

    it("call rejects with the backend's code, message and details, which survive contextBridge", async () => {
      wire(
        fakeBackend({
          'hosting.start': () => {
            throw new NeuronError('hosting_busy', 'already hosting stories260k; stop it first', {
              modelId: 'stories260k',
            })
          },
        }),
      )
      const failure = await neuron.call('hosting.start', { modelId: 'other', blocks: [0, 1] }).then(
        () => null,
        (e: unknown) => e,
      )
      expect(failure).toEqual({
        name: 'NeuronError',
        code: 'hosting_busy',
        message: 'already hosting stories260k; stop it first',
        details: { modelId: 'stories260k' },
      })
    })

    it('call rejects with bad_request when the input breaks the contract, naming the field', async () => {
      wire(fakeBackend({}))
      const failure = await neuron
        .call('hosting.start', { modelId: 'Bad Id!', blocks: [0, 5] })
        .catch((e: { code: string; message: string }) => e)
      expect(failure).toMatchObject({ code: 'bad_request', message: expect.stringContaining('modelId') })
    })

    it('call rejects with bad_response when the backend answers outside the contract', async () => {
      wire(fakeBackend({}))
      vi.spyOn(backend, 'call').mockResolvedValue({ ok: true, value: { phase: 'dancing' } })
      await expect(neuron.call('hosting.status', {})).rejects.toMatchObject({ code: 'bad_response' })
    })

    it('call rejects with ipc_failed when main has no handler', async () => {
      await expect(neuron.call('hosting.status', {})).rejects.toMatchObject({
        code: 'ipc_failed',
        message: expect.stringContaining('hosting.status'),
      })
    })

    it('on delivers only its event, parsed, drops malformed payloads, and unsubscribes', () => {
      wire(fakeBackend({}))
      const warn = vi.spyOn(console, 'warn').mockImplementation(() => {})
      const tokens: unknown[] = []
      const off = neuron.on('chat.token', (data) => tokens.push(data))
      backend.emit('chat.token', { chatId: 'c1', text: 'Once', token: 0 })
      backend.emit('hosting.status', servingStatus)
      backend.emit('chat.token', { chatId: 'c1', text: 42, token: -1 })
      backend.emit('chat.token', { chatId: 'c1', text: ' upon', token: 1 })
      off()
      backend.emit('chat.token', { chatId: 'c1', text: ' a time', token: 2 })
      expect(tokens).toEqual([
        { chatId: 'c1', text: 'Once', token: 0 },
        { chatId: 'c1', text: ' upon', token: 1 },
      ])
      expect(warn).toHaveBeenCalledOnce()
      expect(String(warn.mock.calls[0]?.[0])).toContain('chat.token')
    })
  })
}
