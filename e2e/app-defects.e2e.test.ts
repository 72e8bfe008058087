// Defects of issue 38 found by using the app in Chromium (e2e/app-harness.ts): hosting across the home-network
// switch, the Host screen while something is unreachable, the tracker and limits forms, and labels that went stale.
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AppHarness, MODEL, PROMPT, words } from './app-harness'
import { appCall, HAVE_CHROMIUM, NEEDS_CHROMIUM, SCREENSHOTS, screenshot } from './browser'

const harness = new AppHarness()
// Turning the home-network switch on here must send nothing onto the machine's network.
harness.env = { NEURON_MDNS: '0' }
let page: Page
const open = (screen: string) => harness.open(screen)

/** This computer hosts blocks [2, 5), if it does not already (a spec run alone finds them hosted by beforeAll). */
async function hosting(): Promise<void> {
  const { phase } = (await appCall(page, 'hosting.status', {})) as { phase: string }
  if (phase === 'idle') await harness.hostTheOtherBlocks()
}

/** The sidebar and the Host screen both say this computer serves its blocks again. */
async function servesAgain(): Promise<void> {
  await expect.poll(() => page.getByTestId('status-hosting').getAttribute('data-state'), { timeout: 90_000 }).toBe('ok')
  await open('host')
  await expect
    .poll(() => page.getByTestId('hosting-phase').getAttribute('data-phase'), { timeout: 30_000 })
    .toBe('serving')
}

/** The swarm restarted with the switch: the other volunteer's host joins it again by itself. */
async function everyBlockServed(): Promise<void> {
  await open('swarm')
  await expect
    .poll(() => page.getByTestId('screen-swarm').textContent(), { timeout: 90_000 })
    .toContain('all 5 layers served')
}

/** A new conversation answered greedily; a failed answer's own words say why. */
async function chatAnswers(): Promise<void> {
  await everyBlockServed()
  await open('chat')
  await page.getByTestId('chat-new').click()
  await page.getByTestId('chat-model-select').selectOption(MODEL)
  await harness.setSampling({ temperature: '0' })
  await page.getByTestId('chat-input').fill(PROMPT)
  await page.getByTestId('chat-send').click()
  const answer = page.locator('[data-testid="chat-message"][data-role="assistant"]').last()
  await answer.locator('xpath=self::*[@data-status="done" or @data-status="error"]').waitFor({ timeout: 90_000 })
  expect(await answer.getAttribute('data-status'), (await answer.textContent()) ?? '').toBe('done')
  expect(words(await answer.getByTestId('chat-message-text').textContent())).not.toBe('')
}

/** Flips a home-network switch and waits for the swarm's restart to end. */
async function flip(testId: string, to: boolean): Promise<void> {
  const toggle = page.getByTestId(testId)
  await toggle.click()
  await expect.poll(() => toggle.isChecked(), { timeout: 60_000 }).toBe(to)
  await expect.poll(() => toggle.isDisabled(), { timeout: 60_000 }).toBe(false)
}

describe.skipIf(!HAVE_CHROMIUM)(`defects of issue 38 in the app${NEEDS_CHROMIUM}`, () => {
  beforeAll(async () => {
    await harness.start()
    page = harness.page
    await harness.hostTheOtherBlocks()
  }, 300_000)

  afterAll(async () => {
    // What each process printed, for a failed step: beside the screenshots.
    await mkdir(SCREENSHOTS, { recursive: true })
    for (const [i, p] of harness.processes.entries())
      await writeFile(join(SCREENSHOTS, `defects-process-${i}.log`), p.output())
    await harness.stop()
  })

  it('keeps hosting, and chats answering, when the home-network switch is turned on and off again', async () => {
    // Open to the home network, the swarm admits only listed or paired keys: list the other volunteer's host.
    const otherKey = (await harness.processes[1]?.waitFor(/public key ([\w-]+)\)/))?.[1] ?? ''
    await open('settings')
    await page.getByTestId('settings-allowed-keys').fill(otherKey)
    await page.getByTestId('settings-allowed-keys-save').click()
    await page.getByTestId('settings-saved').waitFor({ timeout: 30_000 })
    await flip('settings-lan-open', true)
    await servesAgain()
    await screenshot(page, 'defects-lan-on-still-hosting')
    await chatAnswers()

    await open('api')
    await flip('api-lan-open', false)
    await servesAgain()
    await chatAnswers()
  }, 360_000)

  const unreachable =
    'says on the Host screen that the app is unreachable, with Pause and Stop off, not a green "Serving"'
  it(unreachable, async () => {
    await servesAgain()
    await harness.app.stop(10_000)
    const badge = page.getByTestId('hosting-phase')
    await expect.poll(() => badge.textContent(), { timeout: 15_000 }).toBe('Unreachable — the app is not answering')
    expect(await badge.getAttribute('class')).not.toContain('phase-serving')
    expect(await page.getByTestId('hosting-pause').isDisabled()).toBe(true)
    expect(await page.getByTestId('hosting-stop').isDisabled()).toBe(true)
    expect(await page.getByTestId('hosting-reach-note').textContent()).toContain('The app does not answer')
    await screenshot(page, 'defects-host-app-unreachable')
    await harness.startApp()
    await expect.poll(() => page.getByTestId('status-app').getAttribute('data-state'), { timeout: 30_000 }).toBe('ok')
    // Hosting resumes with the app; the badge says so again.
    await servesAgain()
    expect(await badge.textContent()).toBe('Serving')
    expect(await page.getByTestId('hosting-stop').isDisabled()).toBe(false)
  }, 180_000)

  it("shows the stopped computer's blocks as unserved on the model card right after Stop", async () => {
    await servesAgain()
    await page.getByTestId('hosting-stop').click()
    await page.getByTestId('dialog-confirm').click()
    const card = page.getByTestId(`model-option-${MODEL}`)
    await card.waitFor({ timeout: 30_000 })
    // The other volunteer still serves the first two blocks; this computer's three are free now.
    await expect.poll(() => card.textContent(), { timeout: 10_000 }).toContain('3 of 5 layers have no host')
    await screenshot(page, 'defects-host-after-stop')
  })

  const trackerFirst =
    'refuses a wrong tracker URL, or one where no tracker answers, before asking what to do with hosting'
  it(trackerFirst, async () => {
    await hosting()
    await expect.poll(() => page.getByTestId('status-hosting').getAttribute('data-state')).toBe('ok')
    await open('settings')
    const url = page.getByTestId('settings-tracker-url')
    const error = page.getByTestId('settings-tracker-error')
    const asking = page.getByTestId('settings-switch-hosting')
    await url.fill('127.0.0.1:7070')
    await page.getByTestId('settings-tracker-save').click()
    await expect.poll(() => error.textContent()).toContain('full http(s) URL')
    expect(await asking.count()).toBe(0)
    await url.fill('http://127.0.0.1:9')
    await page.getByTestId('settings-tracker-save').click()
    await expect.poll(() => error.textContent(), { timeout: 15_000 }).toMatch(/127\.0\.0\.1:9/)
    expect(await asking.count()).toBe(0)
    await screenshot(page, 'defects-tracker-refused-first')
    // A tracker that answers is a real switch: only then is hosting asked about (and here left as it is).
    await url.fill(harness.trackerUrl)
    await page.getByTestId('settings-tracker-save').click()
    await asking.waitFor({ timeout: 15_000 })
    expect(await error.count()).toBe(0)
    await page.getByTestId('settings-switch-cancel').click()
    expect(await page.getByTestId('status-hosting').getAttribute('data-state')).toBe('ok')
  })

  it('refuses a memory limit of 0.0001 GB at the field, marked invalid, and saves nothing; threads too', async () => {
    await open('settings')
    const memory = page.getByTestId('settings-limit-memory')
    const threads = page.getByTestId('settings-limit-threads')
    const threadsBefore = await threads.inputValue()
    await memory.fill('0.0001')
    await threads.fill('0')
    await page.getByTestId('settings-limits-save').click()
    const memoryError = page.getByTestId('settings-limit-memory-error')
    await expect.poll(() => memoryError.textContent()).toContain('at least 1 GB')
    expect(await memory.getAttribute('aria-invalid')).toBe('true')
    expect(await page.getByTestId('settings-limit-threads-error').textContent()).toContain('from 1 to 256')
    expect(await threads.getAttribute('aria-invalid')).toBe('true')
    expect(await page.getByTestId('settings-limit-disk').getAttribute('aria-invalid')).toBe('false')
    // At the field: below it and above the Save button, not under the button.
    const [field, error, save] = await Promise.all(
      [memory, memoryError, page.getByTestId('settings-limits-save')].map((l) => l.boundingBox()),
    )
    expect(error?.y).toBeGreaterThan((field?.y ?? 0) + (field?.height ?? 0) - 1)
    expect(error?.y).toBeLessThan(save?.y ?? 0)
    expect(await page.getByTestId('settings-limits-error').count()).toBe(0)
    await screenshot(page, 'defects-limits-at-field')
    const saved = (await appCall(page, 'settings.get', {})) as { limits: { memoryBytes: number | null } }
    expect(saved.limits.memoryBytes).toBeNull()
    await memory.fill('')
    await threads.fill(threadsBefore)
    await page.getByTestId('settings-limits-save').click()
    await expect.poll(() => memoryError.count()).toBe(0)
  })

  it('shows the home-network switch turned on in the API tab as on in Settings, and off in both', async () => {
    await open('api')
    await flip('api-lan-open', true)
    // each tab shows the switch as the other left it once its state has come (settings.changed, or the tab's own
    // read on opening): polled, as a loaded machine may take a moment (CI once read the API tab before it came)
    await open('settings')
    await expect.poll(() => page.getByTestId('settings-lan-open').isChecked(), { timeout: 10_000 }).toBe(true)
    await screenshot(page, 'defects-lan-switch-same-everywhere')
    await flip('settings-lan-open', false)
    await open('api')
    await expect.poll(() => page.getByTestId('api-lan-open').isChecked(), { timeout: 10_000 }).toBe(false)
  })

  it('says things plainly: layers counted from 1, "unaudited" explained, the core count and import rule', async () => {
    await hosting()
    // Each volunteer alone serves its layers: the route is unaudited, and the screen says what that means.
    await chatAnswers()
    expect(await page.getByTestId('chat-hop-unaudited').count()).toBeGreaterThan(0)
    expect(await page.getByTestId('chat-unaudited-note').last().textContent()).toMatch(
      /^Unaudited: no other computer serves those layers/,
    )
    await open('host')
    expect(await page.getByTestId('hosting-target').textContent()).toContain('layers 3–5 of 5')
    expect(await page.getByTestId('screen-host').textContent()).not.toMatch(/\[\d+, \d+\)/)
    await open('swarm')
    await expect.poll(() => page.getByTestId('screen-swarm').textContent()).toContain('layers 3–5 of 5')
    expect(await page.getByTestId('screen-swarm').textContent()).not.toMatch(/\[\d+, \d+\)/)

    await open('settings')
    const computer = (await appCall(page, 'computer.get', {})) as { profile: { cpu: { physicalCores: number } } }
    const cores = String(computer.profile.cpu.physicalCores)
    await expect.poll(() => page.getByTestId('settings-limit-threads').getAttribute('placeholder')).toBe(cores)
    // Hosting: importing a key waits, and says why; not hosting, it does not claim so.
    expect(await page.getByTestId('settings-identity-import-note').textContent()).toMatch(/stop it under Host a model/)
    expect(await page.getByTestId('settings-identity-import').isDisabled()).toBe(true)
    await appCall(page, 'hosting.stop', {})
    await expect
      .poll(() => page.getByTestId('settings-identity-import-note').textContent())
      .not.toMatch(/stop|stopped/i)
    expect(await page.getByTestId('settings-identity-import').isDisabled()).toBe(false)
    await screenshot(page, 'defects-plain-words')
  })
})
