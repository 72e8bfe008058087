// The app's Earnings, Reputation, Swarm and API screens in its browser mode (e2e/app-harness.ts), once this
// computer has served a chat.
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { NodeIdentity } from '../identity/keys'
import { apiKeyWorksWithCurl, NEEDS_CURL } from './api-tab'
import { AppHarness, MODEL, PROMPT } from './app-harness'
import { HAVE_CHROMIUM, NEEDS_CHROMIUM, screenshot } from './browser'

const harness = new AppHarness()
let page: Page
const open = (screen: string) => harness.open(screen)

describe.skipIf(!HAVE_CHROMIUM)(`the app in a browser against a headless host${NEEDS_CHROMIUM}`, () => {
  beforeAll(async () => {
    await harness.start()
    page = harness.page
    // Earnings, reputation and the API need a range served and chats through it: the app's own (free: local use)
    // and another computer's, which pays this host.
    await harness.hostTheOtherBlocks()
    const stranger = await SwarmClient.connect(harness.trackerUrl, NodeIdentity.generate())
    try {
      for await (const _ of stranger.generate({ modelId: MODEL, prompt: PROMPT, maxTokens: 16 })) {
        // every token is a step this host serves and is paid for
      }
    } finally {
      stranger.close()
    }
    // Last, so its steps are the newest receipts the Earnings screen lists.
    await harness.chatGreedily(PROMPT)
  }, 300_000)

  afterAll(() => harness.stop())

  it(
    'shows on the earnings screen the credits another computer’s chat earned this host, and its own chat as ' +
      'local use',
    async () => {
      await open('settings')
      const hostId = ((await page.getByTestId('settings-host-id').textContent()) ?? '').match(/[0-9a-f]{20}/)?.[0] ?? ''
      expect(hostId).toMatch(/^[0-9a-f]{20}$/)
      // Earnings wait in escrow for the settlement window (a day): pending, not yet settled.
      const ledger = async () =>
        (
          (await (await fetch(`${harness.trackerUrl}/v1/dashboard/hosts/${hostId}`)).json()) as {
            pending_micro: number
          }
        ).pending_micro
      await expect.poll(ledger, { timeout: 20_000 }).toBeGreaterThan(0)
      await open('earnings')
      const pending = page.getByTestId('earnings-pending')
      await expect
        .poll(async () => Number(await pending.getAttribute('data-micro')), { timeout: 20_000 })
        .toBe(await ledger())
      expect(await page.getByTestId('earnings-receipt').count()).toBeGreaterThan(0)
      await page.getByTestId('earnings-local-use').waitFor()
      await screenshot(page, 'earnings')
    },
  )

  it('shows reputation and the swarm', async () => {
    await open('reputation')
    await expect
      .poll(async () => Number(await page.getByTestId('reputation-score').getAttribute('data-score')))
      .toBeGreaterThan(0)
    await screenshot(page, 'reputation')
    await open('swarm')
    await expect.poll(() => page.getByTestId('swarm-host').count()).toBe(2)
    await page.getByTestId(`swarm-coverage-${MODEL}`).waitFor()
    await screenshot(page, 'swarm')
  })

  it.skipIf(NEEDS_CURL !== '')(
    `makes a key on the API tab that curl completes with, masks it once shown, and revokes it (401)${NEEDS_CURL}`,
    async () => {
      await apiKeyWorksWithCurl(page, harness.trackerUrl, MODEL)
    },
  )
})
