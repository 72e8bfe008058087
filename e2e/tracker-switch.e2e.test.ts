// Switching tracker and back, as a volunteer does in Settings: `neuron app --headless` hosts stories260K on its
// embedded tracker; the user switches to another tracker (a second real `neuron tracker` on loopback), keeps the
// dialog's default ("Stop, and host it again when I switch back"), and on switching back the app hosts the same
// blocks again by itself and answers a chat. Driven in Debian's Chromium; screenshots under test-results/screenshots.
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildUi } from '../test/build-ui'
import { scratchDir } from '../test/models'
import { type NeuronProcess, startNeuron } from '../test/processes'
import { HAVE_CHROMIUM, launchChromium, NEEDS_CHROMIUM, openScreen, screenshot } from './browser'

const MODEL = 'stories260k'
let dir = ''
let cleanup: () => Promise<void> = async () => {}
const processes: NeuronProcess[] = []
let browser: Browser | undefined
let page: Page
let embeddedUrl = ''
let externalUrl = ''
/**
 * What the Host screen showed while serving on the embedded tracker: the model and its blocks, and the files fetched.
 */
let servedTarget = ''
let servedFiles: string[] = []

const open = (screen: string) => openScreen(page, screen)
const phase = () => page.getByTestId('hosting-phase').getAttribute('data-phase')
const artifactFiles = async () =>
  (
    await page.getByTestId('artifact-row').evaluateAll((rows) => rows.map((r) => r.getAttribute('data-file') ?? ''))
  ).sort()

/** Types a tracker URL in Settings (empty: the embedded swarm) and saves it. */
async function switchTo(url: string): Promise<void> {
  await open('settings')
  await page.getByTestId('settings-tracker-url').fill(url)
  await page.getByTestId('settings-tracker-save').click()
}

describe.skipIf(!HAVE_CHROMIUM)(`switching tracker and back in the app${NEEDS_CHROMIUM}`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-switch-e2e-'))
    // Its own build: dist/renderer may be rebuilt meanwhile by another checkout sharing it.
    await buildUi(join(dir, 'renderer'))
    const app = startNeuron(['app', '--headless', '--data-dir', join(dir, 'app'), '--threads', '1', '--no-open'], {
      NEURON_RENDERER_DIR: join(dir, 'renderer'),
    })
    processes.push(app)
    const appUrl =
      (await app.waitFor(/Neuron is running at (http:\/\/127\.0\.0\.1:\d+\/\?key=[\w-]+)/, 120_000))[1] ?? ''
    embeddedUrl = (await app.waitFor(/tracker (http:\/\/127\.0\.0\.1:\d+)/))[1] ?? ''
    const external = startNeuron(['tracker', '--port', '0', '--db', join(dir, 'external.sqlite')])
    processes.push(external)
    externalUrl = (await external.waitFor(/tracker listening on (http:\/\/127\.0\.0\.1:\d+)/))[1] ?? ''
    browser = await launchChromium()
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
    await page.goto(appUrl)
    await page.getByTestId('app-ready').waitFor()
  })

  afterAll(async () => {
    await browser?.close()
    for (const p of processes.reverse()) await p.stop(5000)
    await cleanup()
  })

  it('hosts stories260K on the embedded tracker', async () => {
    await open('host')
    await page.getByTestId(`model-option-${MODEL}`).click()
    await page.getByTestId('placement-bar').waitFor()
    await page.getByTestId('hosting-confirm').click()
    await page.locator('[data-testid="hosting-phase"][data-phase="serving"]').waitFor({ timeout: 90_000 })
    await page.getByTestId('serving-panel').waitFor()
    servedTarget = (await page.getByTestId('hosting-target').textContent()) ?? ''
    expect(servedTarget).toMatch(new RegExp(`^${MODEL} · layers? \\d+(–\\d+)? of 5$`))
    servedFiles = await artifactFiles()
    expect(servedFiles.length).toBeGreaterThan(0)
    await expect.poll(() => page.getByTestId('status-hosting').getAttribute('data-state')).toBe('ok')
    await screenshot(page, 'tracker-switch-hosting')
  })

  it('asks what to do with hosting on a switch to another tracker, and by default stops it there', async () => {
    await switchTo(externalUrl)
    const dialog = page.getByTestId('settings-switch-hosting')
    await dialog.waitFor()
    // The dialog names what this computer hosts, with the layers the Host screen showed.
    const layers = servedTarget.match(/layers? \d+(–\d+)?/)?.[0] ?? ''
    expect(await dialog.textContent()).toContain(`${MODEL}, ${layers} `)
    // The default (primary) answer keeps the range for a return.
    const resume = page.getByTestId('settings-switch-resume')
    expect(await resume.textContent()).toBe('Stop, and host it again when I switch back')
    expect(await resume.getAttribute('class')).toContain('primary')
    await screenshot(page, 'tracker-switch-dialog')
    await resume.click()
    await page.getByTestId('settings-saved').waitFor({ timeout: 30_000 })
    await expect
      .poll(() => page.getByTestId('status-tracker').getAttribute('data-state'), { timeout: 30_000 })
      .toBe('ok')
    // Not hosting on the other tracker: the Host screen offers its (empty) model list instead of a range.
    await open('host')
    await expect.poll(phase).toBe('idle')
    expect(await page.getByTestId('hosting-phase').textContent()).toBe('Not hosting')
    expect(await page.getByTestId('serving-panel').count()).toBe(0)
    await expect.poll(() => page.getByTestId(`model-option-${MODEL}`).count()).toBe(0)
    // The model picked on the embedded tracker is not previewed here: no stale pick, no error about it.
    await expect
      .poll(() => page.getByTestId('screen-host').textContent())
      .toContain('Pick a model to see which layers this computer should serve.')
    expect(await page.getByTestId('screen-host').getByRole('alert').count()).toBe(0)
    expect(await page.getByTestId('status-hosting').textContent()).toBe('Not hosting')
    await screenshot(page, 'tracker-switch-external')
  })

  it('hosts the same blocks again on switching back, with nothing else done, and a chat answers', async () => {
    await switchTo('')
    // Nothing is hosted on the other tracker: no question, the switch just saves.
    await page.getByTestId('settings-saved').waitFor({ timeout: 30_000 })
    expect(await page.getByTestId('settings-switch-hosting').count()).toBe(0)
    await open('host')
    await page.locator('[data-testid="hosting-phase"][data-phase="serving"]').waitFor({ timeout: 90_000 })
    await page.getByTestId('serving-panel').waitFor()
    expect(await page.getByTestId('hosting-target').textContent()).toBe(servedTarget)
    expect(await artifactFiles()).toEqual(servedFiles)
    await expect.poll(() => page.getByTestId('status-hosting').getAttribute('data-state')).toBe('ok')
    await screenshot(page, 'tracker-switch-back')

    // The embedded tracker is back at its address, and the swarm it serves answers.
    await open('settings')
    expect(await page.getByTestId('settings-tracker-url').inputValue()).toBe('')
    expect(await page.getByTestId('screen-settings').textContent()).toContain(`Connected now to ${embeddedUrl}`)
    await open('chat')
    await page.getByTestId('chat-new').click()
    await page.getByTestId('chat-model-select').selectOption(MODEL)
    await page.getByTestId('chat-input').fill('Tell me a story about a dog.')
    await page.getByTestId('chat-send').click()
    const answer = page.locator('[data-testid="chat-message"][data-role="assistant"]').last()
    await answer.locator('xpath=self::*[@data-status="done" or @data-status="error"]').waitFor({ timeout: 90_000 })
    expect(await answer.getAttribute('data-status')).toBe('done')
    expect(((await answer.getByTestId('chat-message-text').textContent()) ?? '').trim().length).toBeGreaterThan(0)
    // Served by this computer's range alone: one hop, on the embedded swarm.
    expect(await answer.getByTestId('chat-hop').count()).toBe(1)
    expect(await page.getByTestId('chat-privacy').getAttribute('data-level')).toBe('private')
    await screenshot(page, 'tracker-switch-chat')
  })
})
