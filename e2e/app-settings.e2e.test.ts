// The app's Settings and its trackers in its browser mode (e2e/app-harness.ts): bad input refused, the same address
// and state across a restart, consent before chatting on a public tracker, and a tracker that stops answering.
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { type NeuronProcess, startNeuron } from '../test/processes'
import { AppHarness, PROMPT } from './app-harness'
import { HAVE_CHROMIUM, NEEDS_CHROMIUM, screenshot } from './browser'

const harness = new AppHarness()
let page: Page
const open = (screen: string) => harness.open(screen)
/** The remote tracker the last specs switch to. */
let publicTracker: NeuronProcess | undefined
/** The bound: the sidebar shows a dead tracker within 5 s. */
const SHOWN_WITHIN_MS = 5000
/** The answer the chat showed, to find again after a restart. */
let shownAnswer = ''

describe.skipIf(!HAVE_CHROMIUM)(`the app in a browser against a headless host${NEEDS_CHROMIUM}`, () => {
  beforeAll(async () => {
    await harness.start()
    page = harness.page
    // Hosting to switch away from, and a conversation to find again after a restart.
    await harness.hostTheOtherBlocks()
    shownAnswer = await harness.chatGreedily(PROMPT)
  }, 300_000)

  afterAll(() => harness.stop())

  it('refuses bad form input with a clear message and changes nothing', async () => {
    await open('settings')
    const threadsBefore = await page.getByTestId('settings-limit-threads').inputValue()
    await page.getByTestId('settings-limit-disk').fill('twenty')
    await page.getByTestId('settings-limits-save').click()
    await expect.poll(() => page.getByTestId('settings-limit-disk-error').textContent()).toMatch(/disk/i)
    expect(await page.getByTestId('settings-limit-disk').getAttribute('aria-invalid')).toBe('true')

    await page.getByTestId('settings-tracker-url').fill('http://127.0.0.1:9')
    await page.getByTestId('settings-tracker-save').click()
    // No tracker answers there: refused before hosting on the embedded swarm is asked about.
    await expect
      .poll(() => page.getByTestId('settings-tracker-error').textContent(), { timeout: 15_000 })
      .toMatch(/127\.0\.0\.1:9/)
    expect(await page.getByTestId('settings-switch-hosting').count()).toBe(0)
    await screenshot(page, 'settings-errors')

    // A fresh load shows what the backend kept: nothing changed.
    await page.reload()
    await page.getByTestId('app-ready').waitFor()
    await open('settings')
    expect(await page.getByTestId('settings-tracker-url').inputValue()).toBe('')
    expect(await page.getByTestId('settings-limit-threads').inputValue()).toBe(threadsBefore)
    expect(await page.getByTestId('settings-limit-disk').inputValue()).toBe('')
    await screenshot(page, 'settings')
  })

  it(
    'keeps its address across a restart: the open tab ' + 'reconnects by itself, with the conversation and hosting',
    async () => {
      const before = { appUrl: harness.appUrl, trackerUrl: harness.trackerUrl }
      await expect.poll(() => page.getByTestId('status-app').getAttribute('data-state')).toBe('ok')
      await harness.app.stop(10_000)
      await expect.poll(() => page.getByTestId('status-app').getAttribute('data-state')).toBe('down')
      await screenshot(page, 'status-app-down')
      await harness.startApp()
      harness.trackerUrl = (await harness.app.waitFor(/tracker (http:\/\/127\.0\.0\.1:\d+)/))[1] ?? ''
      // The same link, key included, and the same tracker (so the same OpenAI-compatible API) address.
      expect({ appUrl: harness.appUrl, trackerUrl: harness.trackerUrl }).toEqual(before)
      // No reload: the tab's socket joins the same address again, and its cookie still holds the key.
      await expect.poll(() => page.getByTestId('status-app').getAttribute('data-state'), { timeout: 30_000 }).toBe('ok')
      await expect
        .poll(() => page.getByTestId('status-tracker').getAttribute('data-state'), { timeout: 30_000 })
        .toBe('ok')
      // Hosting resumes on its own after a restart.
      await expect
        .poll(() => page.getByTestId('status-hosting').getAttribute('data-state'), { timeout: 90_000 })
        .toBe('ok')
      await open('chat')
      await page
        .locator('[data-testid="chat-conversation"]')
        .filter({ hasText: PROMPT })
        .getByRole('button', { name: PROMPT })
        .click()
      const messages = page.getByTestId('chat-message')
      await expect.poll(() => messages.count()).toBe(2)
      expect(await messages.first().getByTestId('chat-message-text').textContent()).toBe(PROMPT)
      expect(await messages.last().getByTestId('chat-message-text').textContent()).toBe(shownAnswer)
      await screenshot(page, 'chat-after-restart')
      // A bookmark of the bare address opens the app too: the cookie outlives the restart.
      await page.goto(new URL(harness.appUrl).origin)
      await page.getByTestId('app-ready').waitFor()
    },
  )

  it('asks once before the first chat on a public tracker, saying who sees what', async () => {
    const tracker = startNeuron(['tracker', '--port', '0', '--db', join(harness.dir, 'public.sqlite')])
    publicTracker = tracker
    harness.processes.push(tracker)
    const publicUrl = (await tracker.waitFor(/tracker listening on (http:\/\/127\.0\.0\.1:\d+)/))[1] ?? ''
    await open('settings')
    await page.getByTestId('settings-tracker-url').fill(publicUrl)
    await page.getByTestId('settings-tracker-save').click()
    // This computer hosts on the embedded swarm: a switch to a tracker that answers asks what to do with that.
    expect(await page.getByTestId('settings-switch-hosting').textContent()).toContain('stories260k, layers 3–5')
    await page.getByTestId('settings-switch-resume').click()
    await page.getByTestId('settings-saved').waitFor({ timeout: 30_000 })
    await open('api')
    await expect.poll(() => page.getByTestId('api-endpoint').textContent()).toBe(`${publicUrl}/v1`)
    expect(await page.getByTestId('api-key-remote').textContent()).toContain('come from its operator')
    await open('chat')
    expect(await page.getByTestId('chat-privacy').getAttribute('data-level')).toBe('public')
    const consent = page.getByTestId('chat-consent')
    expect(await consent.textContent()).toMatch(
      /first host on a route sees your prompt's tokens, the last host sees the answer's/,
    )
    expect(await page.getByTestId('chat-input').count()).toBe(0)
    await screenshot(page, 'chat-consent')
    await page.getByTestId('chat-consent-accept').click()
    await page.getByTestId('chat-input').waitFor()
    // Remembered for this tracker: a fresh page does not ask again.
    await page.reload()
    await page.getByTestId('app-ready').waitFor()
    await open('chat')
    await page.getByTestId('chat-input').waitFor()
    expect(await consent.count()).toBe(0)
  })

  it('shows within 5 s that the tracker stopped answering, while the app itself stays connected', async () => {
    const tracker = publicTracker
    if (tracker === undefined) throw new Error('the public tracker spec did not run')
    await expect
      .poll(() => page.getByTestId('status-tracker').getAttribute('data-state'), { timeout: 30_000 })
      .toBe('ok')
    // A hung tracker closes nothing: only the backend's heartbeat can tell.
    tracker.child.kill('SIGSTOP')
    try {
      await expect
        .poll(() => page.getByTestId('status-tracker').getAttribute('data-state'), { timeout: SHOWN_WITHIN_MS })
        .toBe('down')
      expect(await page.getByTestId('status-app').getAttribute('data-state')).toBe('ok')
      expect(await page.getByTestId('status-tracker').textContent()).toBe('Tracker unreachable')
      // Hosting stopped on the switch to this tracker (kept for a return to the embedded swarm).
      expect(await page.getByTestId('status-hosting').textContent()).toBe('Not hosting')
      await screenshot(page, 'status-tracker-down')
    } finally {
      tracker.child.kill('SIGCONT')
    }
    await expect
      .poll(() => page.getByTestId('status-tracker').getAttribute('data-state'), { timeout: 90_000 })
      .toBe('ok')
  })
})
