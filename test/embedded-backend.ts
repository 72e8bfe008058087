// Test helper for electron/backend/*.test.ts: the app backend on its embedded swarm (stories260K packed and
// published), each event it pushes recorded, and what its tests wait for and look at.
import { createServer } from 'node:net'
import { vi } from 'vitest'
import { AppBackend } from '../electron/backend/backend'
import { SettingsStore } from '../electron/backend/settings-store'
import { Host } from '../host/host'
import type { AppEventData, AppEventName } from '../protocol'
import { STORIES_260K } from './models'

export type RecordedEvent = { event: AppEventName; data: unknown; at: number }

/** The backend with the default model, one thread, on a tracker of its own; its events pushed onto `events`. */
export async function startEmbeddedBackend(dataDir: string, events: RecordedEvent[]): Promise<AppBackend> {
  const started = performance.now()
  const backend = await AppBackend.start({ dataDir, trackerUrl: null, defaultModels: [STORIES_260K], threads: 1 })
  console.log(
    `backend started (embedded tracker, stories260K packed and published) in ` +
      `${(performance.now() - started).toFixed(0)} ms`,
  )
  backend.onEvent((event, data) => events.push({ event, data, at: performance.now() }))
  return backend
}

/** The payloads of `events` of one name, in the order pushed. */
export function seenIn(events: RecordedEvent[]) {
  return function seen<E extends AppEventName>(event: E): AppEventData<E>[] {
    return events.filter((e) => e.event === event).map((e) => e.data as AppEventData<E>)
  }
}

/** The hosting the settings file in `dataDir` keeps, to resume on the next start. */
export async function savedHostingIn(dataDir: string): Promise<unknown> {
  return (await SettingsStore.open(dataDir)).value.hosting
}

/** Waits until `check` holds, polling every 25 ms; throws naming `what` after `timeoutMs`. */
export async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** The backend's Hosts started and not yet told to stop, from now on (real Hosts, counted as they start and stop). */
export function liveHosts(): Set<Host> {
  const live = new Set<Host>()
  const { start, stop } = Host.prototype
  vi.spyOn(Host.prototype, 'start').mockImplementation(function (this: Host) {
    live.add(this)
    return start.call(this)
  })
  vi.spyOn(Host.prototype, 'stop').mockImplementation(function (this: Host, timeoutMs?: number) {
    live.delete(this)
    return stop.call(this, timeoutMs)
  })
  return live
}

/** A loopback port nothing listens on. */
export async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const address = server.address()
  await new Promise<void>((r) => server.close(() => r()))
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}
