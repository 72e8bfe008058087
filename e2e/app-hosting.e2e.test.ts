// The app's Computer and Host screens in its browser mode (e2e/app-harness.ts): this computer detected, a file
// that is not a model refused, and a range hosted beside the other volunteer's, from preview to serving.
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { AppHarness, MODEL } from './app-harness'
import { HAVE_CHROMIUM, NEEDS_CHROMIUM, screenshot } from './browser'

const harness = new AppHarness()
let page: Page
const open = (screen: string) => harness.open(screen)

describe.skipIf(!HAVE_CHROMIUM)(`the app in a browser against a headless host${NEEDS_CHROMIUM}`, () => {
  beforeAll(async () => {
    await harness.start()
    page = harness.page
  })

  afterAll(() => harness.stop())

  it('shows this computer as detected', async () => {
    await open('computer')
    await expect.poll(() => page.getByTestId('computer-cpu').textContent()).toMatch(/\d+ (cores|threads)/)
    await expect.poll(() => page.getByTestId('computer-servable').textContent()).toMatch(/\d+(\.\d+)? [GMK]B/)
    await screenshot(page, 'computer')
  })

  it('refuses a file that is not a GGUF with a clear message, and adds nothing', async () => {
    const notGguf = join(harness.dir, 'notes.gguf')
    await writeFile(notGguf, 'these are notes, not a model')
    await open('host')
    await page.getByTestId(`model-option-${MODEL}`).waitFor()
    const models = await page.locator('[data-testid^="model-option-"]').count()
    await page.getByTestId('add-model-path').fill(notGguf)
    await page.getByTestId('add-model-submit').click()
    await expect.poll(() => page.getByTestId('add-model-error').textContent()).toMatch(/not a GGUF/i)
    expect(await page.locator('[data-testid^="model-option-"]').count()).toBe(models)
    await screenshot(page, 'host-not-gguf')
    // Editing the path clears the message about the old one.
    await page.getByTestId('add-model-path').fill('')
    await expect.poll(() => page.getByTestId('add-model-error').count()).toBe(0)
  })

  it('hosts a model: placement preview over the existing coverage, then progress, then serving', async () => {
    await open('host')
    await page.getByTestId(`model-option-${MODEL}`).click()
    const bar = page.getByTestId('placement-bar')
    await bar.waitFor()
    // Blocks 0 and 1 are served by the other host; the proposal takes in the uncovered rest.
    await expect.poll(() => page.getByTestId('placement-block-0').getAttribute('data-before')).toBe('1')
    expect(await page.getByTestId('placement-block-4').getAttribute('data-before')).toBe('0')
    expect(await page.getByTestId('placement-block-4').getAttribute('data-proposed')).toBe('true')
    expect(await page.getByTestId('preview-download').textContent()).toMatch(/\d/)
    expect(await page.getByTestId('preview-credits-per-hour').textContent()).toMatch(/\d/)
    // The manifest's cache cost per block: stories260K's 4 KV heads × (8 + 8) × 2 bytes per token
    expect(await page.getByTestId('preview-cache').textContent()).toContain('128 B per token')
    // One computer like this holds all of stories260K; its 64-wide
    // hidden state (128 B at f16) crosses into a range after block 0.
    expect(await page.getByTestId('preview-hosts-per-route').textContent()).toMatch(/^Hosts per route1computers/)
    expect(await page.getByTestId('preview-seam').textContent()).toMatch(/^Between hosts(128|0) B per token/)
    // Each alternative range is offered once.
    const ranges = (await page.getByTestId('preview-alternative').allTextContents()).map(
      (text) => text.match(/layers? \d+(–\d+)?/)?.[0],
    )
    expect(ranges.length).toBeGreaterThan(0)
    expect(new Set(ranges).size).toBe(ranges.length)
    await screenshot(page, 'host-preview')
    // Take the uncovered blocks only, so answers need both volunteers: a two-hop route. Whether [2, 5) is the
    // proposal or an alternative depends on how fast the other host measured itself, so look in both.
    await page
      .locator('[data-testid="preview-proposal"], [data-testid="preview-alternative"]')
      .filter({ hasText: 'layers 3–5 of 5' })
      .first()
      .click()
    await expect.poll(() => page.getByTestId('placement-block-1').getAttribute('data-proposed')).toBe('false')
    expect(await page.getByTestId('placement-block-2').getAttribute('data-proposed')).toBe('true')
    await page.getByTestId('hosting-confirm').click()
    await page.getByTestId('hosting-phase').waitFor()
    await screenshot(page, 'host-progress')
    await page.locator('[data-testid="hosting-phase"][data-phase="serving"]').waitFor({ timeout: 90_000 })
    await page.getByTestId('serving-panel').waitFor()
    // Only the range's artifacts were fetched: blocks 2–4 and the head, not the embedding or blocks 0–1.
    const files = await page
      .getByTestId('artifact-row')
      .evaluateAll((rows) => rows.map((r) => r.getAttribute('data-file')))
    expect(files.sort()).toEqual(['blocks-2-3.gguf', 'blocks-3-4.gguf', 'blocks-4-5.gguf', 'head.gguf'])
    await screenshot(page, 'host-serving')
  })
})
