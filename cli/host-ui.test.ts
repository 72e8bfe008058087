// `neuron host --ui`: the app served to a browser by a headless host.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import WebSocket from 'ws'
import { buildUi } from '../test/build-ui'
import { scratchDir } from '../test/models'
import { startNeuron } from '../test/processes'
import { Tracker } from '../tracker/server'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir())
})
afterAll(() => cleanup())

describe('neuron host --ui', () => {
  it(
    'serves the app to a browser for a headless host on ' + 'a remote tracker, behind the key in the printed link',
    async () => {
      await buildUi()
      const tracker = await Tracker.start({ dbPath: join(dir, 'ui-tracker.sqlite') })
      const host = startNeuron([
        'host',
        '--ui',
        '--tracker',
        tracker.url,
        '--data-dir',
        join(dir, 'ui-host'),
        '--port',
        '0',
        '--threads',
        '1',
      ])
      try {
        const link = new URL(
          (await host.waitFor(/Neuron is running at (http:\/\/127\.0\.0\.1:\d+\/\?key=[\w-]+)/))[1] ?? '',
        )
        expect((await fetch(link.origin, { redirect: 'manual' })).status).toBe(401)
        const opened = await fetch(link, { redirect: 'manual' })
        expect(opened.status).toBe(303)
        const cookie = (opened.headers.get('set-cookie') ?? '').split(';')[0] ?? ''
        const page = await fetch(link.origin, { headers: { cookie } })
        expect(page.status).toBe(200)
        expect(await page.text()).toContain('<div id="root">')
        // The same contract as the app: this host's settings name the tracker it joined.
        const ws = new WebSocket(`ws://${link.host}/api`, { origin: link.origin, headers: { cookie } })
        const reply = await new Promise<unknown>((resolve, reject) => {
          ws.once('open', () => ws.send(JSON.stringify({ kind: 'call', id: 1, method: 'settings.get', input: {} })))
          ws.once('message', (data) => resolve(JSON.parse(data.toString())))
          ws.once('error', reject)
        })
        ws.close()
        expect(reply).toMatchObject({
          kind: 'reply',
          id: 1,
          ok: true,
          value: { trackerUrl: tracker.url, connectedTrackerUrl: tracker.url },
        })
      } finally {
        await host.stop(5000)
        await tracker.close()
      }
    },
  )
})
