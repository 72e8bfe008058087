// The Host screen while this computer hosts on a tracker that stops answering (a hung `neuron tracker` process on
// loopback, SIGSTOP): it says so rather than a green "Serving", keeps Pause and Stop (they need only the app) and
// turns Serving again once the tracker answers. The app joins that tracker from its start (`--tracker`) and hosts a
// GGUF it adds there itself, as a volunteer on a public swarm does.
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildUi } from '../test/build-ui'
import { STORIES_260K, scratchDir } from '../test/models'
import { type NeuronProcess, startNeuron } from '../test/processes'
import { appCall, HAVE_CHROMIUM, launchChromium, NEEDS_CHROMIUM, openScreen, screenshot } from './browser'

const processes: NeuronProcess[] = []
let cleanup: () => Promise<void> = async () => {}
let browser: Browser | undefined
let page: Page
let tracker: NeuronProcess

describe.skipIf(!HAVE_CHROMIUM)(`the Host screen when the tracker stops answering${NEEDS_CHROMIUM}`, () => {
  beforeAll(async () => {
    let dir = ''
    ;({ dir, cleanup } = await scratchDir('neuron-tracker-down-'))
    await buildUi(join(dir, 'renderer'))
    tracker = startNeuron(['tracker', '--port', '0', '--db', join(dir, 'tracker.sqlite')])
    processes.push(tracker)
    const trackerUrl = (await tracker.waitFor(/tracker listening on (http:\/\/127\.0\.0\.1:\d+)/))[1] ?? ''
    const app = startNeuron(
      ['app', '--headless', '--data-dir', join(dir, 'app'), '--threads', '1', '--no-open', '--tracker', trackerUrl],
      { NEURON_RENDERER_DIR: join(dir, 'renderer') },
    )
    processes.push(app)
    const appUrl =
      (await app.waitFor(/Neuron is running at (http:\/\/127\.0\.0\.1:\d+\/\?key=[\w-]+)/, 120_000))[1] ?? ''
    browser = await launchChromium()
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
    await page.goto(appUrl)
    await page.getByTestId('app-ready').waitFor()
    // The app publishes the GGUF to this tracker and hosts every layer of it.
    const { modelId } = (await appCall(page, 'models.add', { path: STORIES_260K })) as { modelId: string }
    await appCall(page, 'hosting.start', { modelId, blocks: [0, 5] })
    const deadline = Date.now() + 90_000
    while (((await appCall(page, 'hosting.status', {})) as { phase: string }).phase !== 'serving') {
      if (Date.now() > deadline) throw new Error('hosting did not reach serving in 90 s')
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
  }, 300_000)

  afterAll(async () => {
    await browser?.close()
    for (const p of processes.reverse()) await p.stop(5000)
    await cleanup()
  })

  it(
    'says the tracker is unreachable instead of a green "Serving", keeping Pause and Stop, then ' + 'Serving again',
    async () => {
      await openScreen(page, 'host')
      const badge = page.getByTestId('hosting-phase')
      await expect.poll(() => badge.textContent(), { timeout: 30_000 }).toBe('Serving')
      tracker.child.kill('SIGSTOP')
      try {
        await expect
          .poll(() => badge.textContent(), { timeout: 15_000 })
          .toBe('Tracker unreachable — no chats reach this computer')
        expect(await badge.getAttribute('class')).not.toContain('phase-serving')
        // Pausing or stopping needs only the app; the note says why no chat arrives.
        expect(await page.getByTestId('hosting-pause').isDisabled()).toBe(false)
        expect(await page.getByTestId('hosting-stop').isDisabled()).toBe(false)
        await page.getByTestId('hosting-reach-note').waitFor()
        await screenshot(page, 'host-tracker-unreachable')
      } finally {
        tracker.child.kill('SIGCONT')
      }
      await expect.poll(() => badge.textContent(), { timeout: 90_000 }).toBe('Serving')
    },
  )
})
