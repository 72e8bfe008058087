import { afterEach, describe, expect, it, vi } from 'vitest'
import { IPC_CALL, IPC_EVENT } from '../../protocol/app'
import { fakeBackend, servingStatus } from '../../test/fake-backend'
import { APP_PAGE, ipcMain, ipcRenderer, navigatePage, resetElectronMock, webContents } from '../__mocks__/electron'
import { wireAppIpc } from './ipc'

vi.mock('electron', () => import('../__mocks__/electron'))

describe('main IPC wiring (electron mocked: no Electron binary on this machine)', () => {
  afterEach(() => resetElectronMock())

  it('answers IPC_CALL with the backend Ack for the method and input the renderer sent', async () => {
    const backend = fakeBackend({ 'hosting.status': () => servingStatus })
    wireAppIpc(ipcMain, backend, () => webContents, APP_PAGE)
    expect(await ipcRenderer.invoke(IPC_CALL, 'hosting.status', {})).toEqual({ ok: true, value: servingStatus })
    expect(await ipcRenderer.invoke(IPC_CALL, 'hosting.launch', {})).toMatchObject({
      ok: false,
      error: { code: 'bad_request' },
    })
    expect(backend.calls.map((c) => c.method)).toEqual(['hosting.status', 'hosting.launch'])
  })

  it('turns a backend that throws into an internal error Ack and keeps serving', async () => {
    const backend = fakeBackend({ 'hosting.status': () => servingStatus })
    const real = backend.call.bind(backend)
    vi.spyOn(backend, 'call').mockRejectedValueOnce(new Error('database is locked'))
    wireAppIpc(ipcMain, backend, () => webContents, APP_PAGE)
    expect(await ipcRenderer.invoke(IPC_CALL, 'hosting.status', {})).toEqual({
      ok: false,
      error: { code: 'internal', message: 'internal error: database is locked' },
    })
    vi.mocked(backend.call).mockImplementation(real)
    expect(await ipcRenderer.invoke(IPC_CALL, 'hosting.status', {})).toEqual({ ok: true, value: servingStatus })
  })

  it('answers only the app’s own page: a frame that navigated elsewhere is refused before the backend', async () => {
    const backend = fakeBackend({ 'hosting.status': () => servingStatus })
    wireAppIpc(ipcMain, backend, () => webContents, APP_PAGE)
    navigatePage(`${APP_PAGE}#/chat`)
    expect(await ipcRenderer.invoke(IPC_CALL, 'hosting.status', {})).toEqual({ ok: true, value: servingStatus })
    navigatePage('https://evil.example/')
    expect(await ipcRenderer.invoke(IPC_CALL, 'identity.export', {})).toMatchObject({
      ok: false,
      error: { code: 'forbidden' },
    })
    expect(backend.calls.map((c) => c.method)).toEqual(['hosting.status'])
  })

  it('refuses a call whose method is not a string without reaching the backend', async () => {
    const backend = fakeBackend({})
    wireAppIpc(ipcMain, backend, () => webContents, APP_PAGE)
    expect(await ipcRenderer.invoke(IPC_CALL, 7, {})).toMatchObject({ ok: false, error: { code: 'bad_request' } })
    expect(backend.calls).toEqual([])
  })

  it('forwards backend events to the window on IPC_EVENT, and skips a missing or destroyed window', () => {
    const backend = fakeBackend({})
    const received: unknown[][] = []
    ipcRenderer.on(IPC_EVENT, (_e, ...args) => received.push(args))
    let window: typeof webContents | null = null
    wireAppIpc(ipcMain, backend, () => window, APP_PAGE)
    backend.emit('hosting.status', servingStatus)
    window = webContents
    backend.emit('chat.token', { chatId: 'c1', text: 'Once', token: 0 })
    webContents.destroy()
    backend.emit('chat.token', { chatId: 'c1', text: ' upon', token: 1 })
    expect(received).toEqual([['chat.token', { chatId: 'c1', text: 'Once', token: 0 }]])
  })

  it('unwiring removes the handler and stops forwarding events', async () => {
    const backend = fakeBackend({ 'hosting.status': () => servingStatus })
    const received: unknown[] = []
    ipcRenderer.on(IPC_EVENT, (_e, ...args) => received.push(args))
    const unwire = wireAppIpc(ipcMain, backend, () => webContents, APP_PAGE)
    unwire()
    backend.emit('hosting.status', servingStatus)
    await expect(ipcRenderer.invoke(IPC_CALL, 'hosting.status', {})).rejects.toThrow(/No handler registered/)
    expect(received).toEqual([])
    // and it can be wired again (a second handle on the same channel would throw in Electron)
    wireAppIpc(ipcMain, backend, () => webContents, APP_PAGE)
    expect(await ipcRenderer.invoke(IPC_CALL, 'hosting.status', {})).toMatchObject({ ok: true })
  })
})
