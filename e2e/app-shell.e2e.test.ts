// The app's frame in its browser mode (e2e/app-harness.ts), the app hosting the whole model alone: the page that
// asks for the key, narrow and wide windows, the theme, the Log screen, and local use (chatting through your own host
// is free).
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AppHarness, PROMPT } from './app-harness'
import { appCall, HAVE_CHROMIUM, NEEDS_CHROMIUM, screenshot } from './browser'
import { layoutProblems, openOnAnyWidth } from './layout-checks'

const harness = new AppHarness()
let page: Page
/** The widths the issue names: a phone, a small laptop window, a wide screen. */
const WIDTHS = [390, 800, 1400] as const

interface EarningsView {
  balanceMicro: number
  pendingMicro: number
  account: { balanceMicro: number } | null
}

describe.skipIf(!HAVE_CHROMIUM)(`the app's frame in a browser, hosting alone${NEEDS_CHROMIUM}`, () => {
  beforeAll(async () => {
    await harness.start({ otherHost: false })
    page = harness.page
    // Every layer on this computer: its chats go through its own host only.
    await harness.host([0, 5])
  }, 300_000)

  afterAll(() => harness.stop())

  it('a chat through your own host leaves your balance unchanged, and Earnings shows it as local use', async () => {
    await harness.chatGreedily(PROMPT)
    // The chat account is opened (with its grant) by the first answer.
    const before = (await appCall(page, 'earnings.get', {})) as EarningsView
    expect(before.account).not.toBeNull()
    await harness.chatGreedily('Tell me about a dog.')
    // The answer says whose host served it, and that it was free.
    const answer = page.locator('[data-testid="chat-message"][data-role="assistant"]').last()
    expect(await answer.getByTestId('chat-hop-own').count()).toBe(1)
    expect(await answer.getByTestId('chat-route').textContent()).toContain('free: your own host')
    const after = (await appCall(page, 'earnings.get', {})) as EarningsView
    expect(after.account?.balanceMicro).toBe(before.account?.balanceMicro)
    // Nor did the host earn from its own computer's chats.
    expect(after.balanceMicro + after.pendingMicro).toBe(0)

    await harness.open('earnings')
    await expect.poll(() => page.getByTestId('earnings-local-use').textContent()).toMatch(/free/)
    const local = page.locator('[data-testid="earnings-receipt"][data-local="true"]')
    expect(await local.count()).toBeGreaterThan(0)
    expect(await local.first().textContent()).toContain('local use · free')
    await screenshot(page, 'earnings-local-use')
  })

  it(
    'takes the whole printed link on the key page, says where the key is kept, ' + 'and says when a key is wrong',
    async () => {
      const stranger = await harness.newPage()
      try {
        const origin = new URL(harness.appUrl).origin
        await stranger.goto(origin)
        expect(await stranger.getByTestId('ui-key-file').textContent()).toMatch(/[/\\]app[/\\]ui-key$/)
        await stranger.getByTestId('ui-key-input').fill('not-the-key')
        await stranger.getByTestId('ui-key-submit').click()
        await stranger.getByTestId('ui-key-error').waitFor()
        expect(await stranger.getByTestId('ui-key-error').textContent()).toMatch(/not this app’s key/)
        expect(await stranger.getByTestId('ui-key-input').getAttribute('aria-invalid')).toBe('true')
        await screenshot(stranger, 'key-page-wrong-key')
        // The whole line neuron printed, pasted as it was copied from the terminal.
        await stranger.getByTestId('ui-key-input').fill(`  Neuron is running at ${harness.appUrl}  `)
        await stranger.getByTestId('ui-key-submit').click()
        await stranger.getByTestId('app-ready').waitFor()
      } finally {
        await stranger.context().close()
      }
    },
  )

  it('fits Chat, Host and Settings at 390, 800 and 1400 px: nothing cut, nothing overlapping', async () => {
    const faults: string[] = []
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 860 })
      for (const screen of ['chat', 'host', 'settings']) {
        await openOnAnyWidth(page, screen)
        if (screen === 'chat') await page.getByTestId('chat-message').first().waitFor()
        if (screen === 'host') await page.getByTestId('serving-panel').waitFor()
        await screenshot(page, `layout-${screen}-${width}`)
        for (const problem of await layoutProblems(page)) faults.push(`${screen} at ${width} px: ${problem}`)
      }
      // The message box keeps a usable width, whatever the window.
      await openOnAnyWidth(page, 'chat')
      const box = await page.getByTestId('chat-input').boundingBox()
      expect(box?.width, `the message box at ${width} px`).toBeGreaterThan(Math.min(300, width - 60))
    }
    expect(faults).toEqual([])
    expect(await page.getByTestId('app-ready').getAttribute('data-layout')).toBe('layout-full')
  })

  it('fits every other screen in a phone-sized window too', async () => {
    await page.setViewportSize({ width: 390, height: 860 })
    const faults: string[] = []
    for (const screen of ['computer', 'earnings', 'reputation', 'swarm', 'api', 'log']) {
      await openOnAnyWidth(page, screen)
      await screenshot(page, `layout-${screen}-390`)
      for (const problem of await layoutProblems(page)) faults.push(`${screen}: ${problem}`)
    }
    expect(faults).toEqual([])
    await page.setViewportSize({ width: 1400, height: 860 })
  })

  it('folds the sidebar to icons and back, and keeps the choice over a reload', async () => {
    await page.setViewportSize({ width: 1400, height: 860 })
    await page.getByTestId('sidebar-collapse').click()
    await expect.poll(() => page.getByTestId('app-ready').getAttribute('data-layout')).toBe('layout-rail')
    await page.reload()
    await page.getByTestId('app-ready').waitFor()
    expect(await page.getByTestId('app-ready').getAttribute('data-layout')).toBe('layout-rail')
    expect(await layoutProblems(page)).toEqual([])
    await screenshot(page, 'layout-rail-1400')
    await page.getByTestId('sidebar-collapse').click()
    await expect.poll(() => page.getByTestId('app-ready').getAttribute('data-layout')).toBe('layout-full')
  })

  it('switches between light and dark, whatever the system prefers, and keeps the choice', async () => {
    const drawn = () => page.evaluate(() => document.documentElement.dataset.theme)
    const background = () => page.evaluate(() => getComputedStyle(document.body).backgroundColor)
    await page.emulateMedia({ colorScheme: 'light' })
    // system → light → dark
    await page.getByTestId('theme-toggle').click()
    await page.getByTestId('theme-toggle').click()
    expect(await page.getByTestId('theme-toggle').getAttribute('data-theme-choice')).toBe('dark')
    expect(await drawn()).toBe('dark')
    const dark = await background()
    await page.reload()
    await page.getByTestId('app-ready').waitFor()
    expect(await drawn()).toBe('dark')
    await screenshot(page, 'theme-dark')
    await page.getByTestId('theme-toggle').click()
    expect(await drawn()).toBe('light')
    expect(await background()).not.toBe(dark)
  })

  it('shows what the app did on the Log screen, filtered as asked', async () => {
    await harness.open('log')
    await expect.poll(() => page.getByTestId('log-line').count()).toBeGreaterThan(0)
    await page.getByTestId('log-filter').fill('host')
    await expect
      .poll(async () => (await page.getByTestId('log-line').allTextContents()).every((l) => /host/i.test(l)))
      .toBe(true)
    expect(await page.getByTestId('log-line').count()).toBeGreaterThan(0)
    await screenshot(page, 'log')
  })

  it('does not advertise Ctrl+1–9 in a browser, which takes those keys for its tabs', async () => {
    expect(await page.locator('.sidebar kbd').count()).toBe(0)
    expect(await page.getByTestId('nav-chat').getAttribute('title')).toBe('Chat')
  })
})
