// From Hugging Face to chatting, in the app's browser mode (e2e/app-harness.ts) driven in Chromium: a model found by
// search on a local HTTP server that answers as the Hub does (the real Hub cannot be reached on this machine),
// downloaded through a cut connection (resumed), published, hosted by this computer, and chatted with.
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { HubTestServer } from '../test/hub-server'
import { STORIES_260K } from '../test/models'
import { AppHarness, PROMPT } from './app-harness'
import { HAVE_CHROMIUM, NEEDS_CHROMIUM, screenshot } from './browser'

const REPO = 'karpathy/stories260K-GGUF'
const NAME = 'stories260K-Q8_0'
const MODEL_ID = 'stories260k-q8_0'

const harness = new AppHarness()
let page: Page
let hub: HubTestServer

describe.skipIf(!HAVE_CHROMIUM)(`a model from a local Hub, in the app${NEEDS_CHROMIUM}`, () => {
  beforeAll(async () => {
    const bytes = await readFile(STORIES_260K)
    hub = await HubTestServer.start([
      {
        id: REPO,
        downloads: 1200,
        files: [
          { path: `${NAME}.gguf`, bytes },
          { path: 'README.md', bytes: Buffer.from('#') },
        ],
      },
      { id: 'someone/stories-quantized-GGUF', downloads: 3, files: [{ path: 'stories-Q4_0.gguf', bytes }] },
    ])
    harness.env = { HF_ENDPOINT: hub.endpoint, HF_HOME: join('/nonexistent', 'hf-home') }
    await harness.start()
    page = harness.page
  }, 240_000)

  afterAll(async () => {
    await harness.stop()
    await hub?.close()
  })

  it('finds the model by search, shows it fits, downloads it through a cut connection, publishes it', async () => {
    await harness.open('host')
    await page.getByTestId('hub-query').fill('stories')
    await page.getByTestId('hub-search').click()
    await page.getByTestId(`hub-hit-${REPO}`).waitFor()
    // Most downloaded first.
    const hits = await page.locator('[data-testid^="hub-hit-"]').evaluateAll((els) => els.map((e) => e.dataset.testid))
    expect(hits).toEqual([`hub-hit-${REPO}`, 'hub-hit-someone/stories-quantized-GGUF'])
    await screenshot(page, 'hub-search')
    await page.getByTestId(`hub-hit-${REPO}`).click()
    const card = page.getByTestId(`hub-model-${NAME}`)
    await card.waitFor()
    expect(await card.textContent()).toMatch(/Q8_0.*1\.\d MB.*Fits on this computer whole\./)
    // The embedded swarm publishes the same bytes (stories260K) already: matched by the Hub's sha256.
    expect(await page.getByTestId(`hub-on-swarm-${NAME}`).textContent()).toMatch(/Already on this swarm as stories260k/)
    await screenshot(page, 'hub-repository')
    hub.troubleNext(`${NAME}.gguf`, { cutAfter: 400_000 })
    await page.getByTestId(`hub-download-${NAME}`).click()
    await page.locator('[data-testid="hub-download"][data-phase="ready"]').waitFor({ timeout: 60_000 })
    expect(await page.getByTestId('hub-download-text').textContent()).toBe(`Ready: published as ${MODEL_ID}`)
    expect(hub.cdnRanges()).toEqual([undefined, 'bytes=400000-'])
    await screenshot(page, 'hub-downloaded')
  })

  it('the downloaded model is selected with its preview; this computer hosts it and chats with it', async () => {
    const option = page.getByTestId(`model-option-${MODEL_ID}`)
    await option.waitFor()
    await expect.poll(() => option.getAttribute('aria-pressed')).toBe('true')
    await page.getByTestId('placement-bar').waitFor()
    // Nobody else serves it: the proposal is every block.
    expect(await page.getByTestId('placement-block-0').getAttribute('data-proposed')).toBe('true')
    expect(await page.getByTestId('placement-block-4').getAttribute('data-proposed')).toBe('true')
    await page.getByTestId('hosting-confirm').click()
    await page.locator('[data-testid="hosting-phase"][data-phase="serving"]').waitFor({ timeout: 90_000 })
    await screenshot(page, 'hub-hosting')

    await harness.open('chat')
    await page.getByTestId('chat-new').click()
    await page.getByTestId('chat-model-select').selectOption(MODEL_ID)
    await harness.setSampling({ temperature: '0' })
    await page.getByTestId('chat-input').fill(PROMPT)
    await page.getByTestId('chat-send').click()
    const answer = await harness.lastAnswer()
    expect(answer.trim().length).toBeGreaterThan(0)
    await screenshot(page, 'hub-chat')
  })
})
