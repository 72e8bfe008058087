// The app in its browser mode, as a volunteer uses it: `neuron app --headless` (an embedded private
// tracker that publishes stories260K, and this computer's host) plus a second real host process, driven
// in Debian's Chromium. Each step saves a screenshot under test-results/screenshots.
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { NodeIdentity } from '../identity/keys'
import { Conversation } from '../protocol/app'
import { buildUi } from '../test/build-ui'
import { scratchDir } from '../test/models'
import { type NeuronProcess, startNeuron } from '../test/processes'
import { renderChat } from '../text/chat-template'
import { apiKeyWorksWithCurl, NEEDS_CURL } from './api-tab'
import { HAVE_CHROMIUM, launchChromium, NEEDS_CHROMIUM, openScreen, screenshot } from './browser'

const MODEL = 'stories260k'
const PROMPT = 'Tell me a story about a cat.'
let dir = ''
let cleanup: () => Promise<void> = async () => {}
const processes: NeuronProcess[] = []
let browser: Browser | undefined
let page: Page
let appUrl = ''
let trackerUrl = ''
let app: NeuronProcess
/** The remote tracker the last specs switch to. */
let publicTracker: NeuronProcess | undefined
/** The bound: the sidebar shows a dead tracker within 5 s. */
const SHOWN_WITHIN_MS = 5000
/** The answer the chat showed, to find again after a restart. */
let shownAnswer = ''

/** `neuron app --headless` on the same data dir every time: the same address (port and key) every run. */
async function startApp(): Promise<void> {
  app = startNeuron(['app', '--headless', '--data-dir', join(dir, 'app'), '--threads', '1', '--no-open'], {
    NEURON_RENDERER_DIR: join(dir, 'renderer'),
  })
  processes.push(app)
  // The printed link carries the key; the page swaps it for a cookie.
  appUrl = (await app.waitFor(/Neuron is running at (http:\/\/127\.0\.0\.1:\d+\/\?key=[\w-]+)/, 120_000))[1] ?? ''
}

/**
 * An answer's text as shown: rendered as Markdown, so compared with its blank lines and runs of spaces as one space.
 */
const words = (text: string | null) => (text ?? '').replace(/\s+/g, ' ').trim()

/** Waits for the last answer to end and returns its shown text; it must have ended done. */
async function lastAnswer(): Promise<string> {
  const answer = page.locator('[data-testid="chat-message"][data-role="assistant"]').last()
  await answer.locator('xpath=self::*[@data-status="done" or @data-status="error"]').waitFor({ timeout: 90_000 })
  expect(await answer.getAttribute('data-status')).toBe('done')
  return (await answer.getByTestId('chat-message-text').textContent()) ?? ''
}

/** Sets the active conversation's sampling fields (the panel opens if folded). */
async function setSampling(fields: Record<string, string>): Promise<void> {
  if ((await page.getByTestId('chat-settings').getAttribute('open')) === null)
    await page.getByTestId('chat-settings-toggle').click()
  for (const [field, value] of Object.entries(fields)) await page.getByTestId(`chat-setting-${field}`).fill(value)
}

const open = (screen: string) => openScreen(page, screen)

describe.skipIf(!HAVE_CHROMIUM)(`the app in a browser against a headless host${NEEDS_CHROMIUM}`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-e2e-'))
    // Its own build: dist/renderer may be rebuilt meanwhile by another checkout sharing it.
    await buildUi(join(dir, 'renderer'))
    await startApp()
    trackerUrl = (await app.waitFor(/tracker (http:\/\/127\.0\.0\.1:\d+)/))[1] ?? ''
    // Another volunteer already serves the first two blocks: the preview must show them covered.
    const other = startNeuron([
      'host',
      '--tracker',
      trackerUrl,
      '--data-dir',
      join(dir, 'other'),
      '--model',
      MODEL,
      '--blocks',
      '0:2',
      '--threads',
      '1',
    ])
    processes.push(other)
    await other.waitFor(/host [0-9a-f]{20} ready/, 120_000)
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

  it('shows this computer as detected', async () => {
    await open('computer')
    await expect.poll(() => page.getByTestId('computer-cpu').textContent()).toMatch(/\d+ (cores|threads)/)
    await expect.poll(() => page.getByTestId('computer-servable').textContent()).toMatch(/\d+(\.\d+)? [GMK]B/)
    await screenshot(page, 'computer')
  })

  it('refuses a file that is not a GGUF with a clear message, and adds nothing', async () => {
    const notGguf = join(dir, 'notes.gguf')
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
      (text) => text.match(/\[\d+, \d+\)/)?.[0],
    )
    expect(ranges.length).toBeGreaterThan(0)
    expect(new Set(ranges).size).toBe(ranges.length)
    await screenshot(page, 'host-preview')
    // Take the uncovered blocks only, so answers need both volunteers: a two-hop route. Whether [2, 5) is the
    // proposal or an alternative depends on how fast the other host measured itself, so look in both.
    await page
      .locator('[data-testid="preview-proposal"], [data-testid="preview-alternative"]')
      .filter({ hasText: '[2, 5)' })
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

  it("streams a chat answer equal to the swarm client's greedy output", async () => {
    await open('chat')
    await page.getByTestId('chat-new').click()
    await page.getByTestId('chat-model-select').selectOption(MODEL)
    // Greedy: the default temperature (0.7) samples, and this compares with the client's greedy output.
    await setSampling({ temperature: '0' })
    await page.getByTestId('chat-input').fill(PROMPT)
    // The prompt's tokens are counted as the user types, against the model's 2048-token context.
    await expect.poll(() => page.getByTestId('chat-context').textContent()).toMatch(/^\d+ \+ 64 tokens of 2048$/)
    await page.getByTestId('chat-send').click()
    const shown = await lastAnswer()
    shownAnswer = shown

    const client = await SwarmClient.connect(trackerUrl, NodeIdentity.generate())
    try {
      const prompt = renderChat(await client.tokenizer(MODEL), [{ role: 'user', content: PROMPT }])
      const generation = client.generate({
        modelId: MODEL,
        prompt,
        maxTokens: 64,
        sampling: { temperature: 0, seed: 0 },
        stopAtEog: true,
      })
      let expected = ''
      for (let next = await generation.next(); !next.done; next = await generation.next()) expected += next.value.text
      expect(expected.length).toBeGreaterThan(0)
      expect(words(shown)).toBe(words(expected))
    } finally {
      client.close()
    }
    // The route that served it: two hosts, the other volunteer's and this computer's.
    expect(await page.getByTestId('chat-route').last().isVisible()).toBe(true)
    expect(await page.getByTestId('chat-route').last().getByTestId('chat-hop').count()).toBe(2)
    // On the embedded swarm every host is on this computer, and the chat says so.
    expect(await page.getByTestId('chat-privacy').getAttribute('data-level')).toBe('private')
    expect(await page.getByTestId('chat-privacy').textContent()).toBe('Private: all on this computer')
    await screenshot(page, 'chat')
    // The theme follows the OS.
    await page.emulateMedia({ colorScheme: 'dark' })
    await screenshot(page, 'chat-dark')
    await page.emulateMedia({ colorScheme: 'light' })
  })

  it('samples anew on regenerate at temperature > 0: another seed, another answer', async () => {
    await page.getByTestId('chat-new').click()
    await page.getByTestId('chat-model-select').selectOption(MODEL)
    await setSampling({ temperature: '1', seed: '1' })
    await page.getByTestId('chat-input').fill('Once upon a time there was a dog.')
    await page.getByTestId('chat-send').click()
    const first = await lastAnswer()
    await setSampling({ seed: '2' })
    const before = await page.locator('[data-testid="chat-message"][data-role="assistant"]').last().elementHandle()
    await page.getByTestId('chat-regenerate').click()
    // The first answer is replaced by a new one.
    await expect.poll(() => before?.evaluate((e) => e.isConnected)).toBe(false)
    const second = await lastAnswer()
    expect(first.length).toBeGreaterThan(0)
    expect(second.length).toBeGreaterThan(0)
    expect(second).not.toBe(first)
    expect(await page.getByTestId('chat-message').count()).toBe(2)
    expect(await page.getByTestId('chat-thread').getAttribute('aria-live')).toBe('polite')
    await screenshot(page, 'chat-sampling')
  })

  it('copies an answer, edits and resends a turn, renames, finds and exports the conversation', async () => {
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'])
    const shown = await lastAnswer()
    await page.getByTestId('chat-copy').last().click()
    await expect.poll(async () => words(await page.evaluate(() => navigator.clipboard.readText()))).toBe(words(shown))

    await page.getByTestId('chat-edit').first().click()
    await page.getByTestId('chat-edit-input').fill('Once upon a time there was a cat.')
    await page.getByTestId('chat-edit-send').click()
    await expect
      .poll(() => page.getByTestId('chat-message').first().textContent())
      .toBe('Once upon a time there was a cat.')
    await lastAnswer()
    expect(await page.getByTestId('chat-message').count()).toBe(2)

    await page.locator('[data-testid="chat-conversation"].active').getByTestId('chat-rename').click()
    await page.getByTestId('chat-rename-input').fill('Dog stories')
    await page.getByTestId('chat-rename-input').press('Enter')
    await page.locator('[data-testid="chat-conversation"].active').filter({ hasText: 'Dog stories' }).waitFor()
    await page.getByTestId('chat-search').fill('dog STORIES')
    await expect.poll(() => page.getByTestId('chat-conversation').count()).toBe(1)
    await page.getByTestId('chat-search').fill('')
    await expect.poll(() => page.getByTestId('chat-conversation').count()).toBeGreaterThan(1)

    // A system prompt goes first in the prompt: the count grows as it is taken.
    const tokens = async () =>
      Number(((await page.getByTestId('chat-context').textContent()) ?? '').match(/^(\d+) \+/)?.[1])
    const before = await tokens()
    await page.getByTestId('chat-setting-system').fill('You tell short stories about animals.')
    await page.getByTestId('chat-input').focus()
    await expect.poll(tokens).toBeGreaterThan(before)

    const [markdown] = await Promise.all([page.waitForEvent('download'), page.getByTestId('chat-export-md').click()])
    expect(markdown.suggestedFilename()).toBe('dog-stories.md')
    const text = await readFile((await markdown.path()) ?? '', 'utf8')
    expect(text).toMatch(
      new RegExp(
        String.raw`^# Dog stories\n\nModel: stories260k\n\n## System\n\nYou tell short stories about animals\.\n\n` +
          String.raw`## You\n\nOnce upon a time there was a cat\.\n\n## Assistant\n\n`,
      ),
    )
    const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('chat-export-json').click()])
    expect(json.suggestedFilename()).toBe('dog-stories.json')
    const kept = Conversation.parse(JSON.parse(await readFile((await json.path()) ?? '', 'utf8')))
    expect([kept.title, kept.messages.length, kept.settings?.seed]).toEqual(['Dog stories', 2, 2])
    await screenshot(page, 'chat-edited')
  })

  it(
    'refuses before sending a prompt too long for the context, naming its token count, and says what is wrong ' +
      'with a field',
    async () => {
      await page.getByTestId('chat-new').click()
      await page.getByTestId('chat-model-select').selectOption(MODEL)
      await page.getByTestId('chat-input').fill('The cat sat on the mat. '.repeat(400))
      const context = page.getByTestId('chat-context')
      await expect.poll(() => context.getAttribute('data-over')).toBe('true')
      const promptTokens = Number(((await context.textContent()) ?? '').match(/^(\d+) \+ 64 tokens of 2048$/)?.[1])
      expect(promptTokens).toBeGreaterThan(2048)
      await page.getByTestId('chat-send').click()
      const refusal = page.locator('[data-testid="chat-error"][data-code="context_exceeded"]')
      await expect.poll(() => refusal.textContent()).toContain(`This prompt is ${promptTokens} tokens`)
      expect(await refusal.textContent()).toContain("past the model's context of 2048 tokens")
      // Nothing was sent: no turn in the thread, and the text stays in the box to shorten.
      expect(await page.getByTestId('chat-message').count()).toBe(0)
      expect((await page.getByTestId('chat-input').inputValue()).length).toBeGreaterThan(0)
      await screenshot(page, 'chat-too-long')
      // Max tokens may be emptied while typing; what is not a valid value says so, and sending waits for it.
      await page.getByTestId('chat-input').fill('Hi')
      await page.getByTestId('chat-max-tokens').fill('')
      await expect
        .poll(() => page.getByTestId('chat-field-error-maxTokens').textContent())
        .toBe('Max tokens takes a whole number from 1 to 4096; it is empty.')
      await page.getByTestId('chat-send').click()
      await expect.poll(() => page.locator('[data-testid="chat-error"][data-code="invalid_field"]').count()).toBe(1)
      expect(await page.getByTestId('chat-message').count()).toBe(0)
      await page.getByTestId('chat-max-tokens').fill('64')
      await expect.poll(() => page.getByTestId('chat-field-error-maxTokens').count()).toBe(0)
      await page.getByTestId('chat-input').fill('')
    },
  )

  it('shows on the earnings screen the credits that chat earned this host', async () => {
    await open('settings')
    const hostId = ((await page.getByTestId('settings-host-id').textContent()) ?? '').match(/[0-9a-f]{20}/)?.[0] ?? ''
    expect(hostId).toMatch(/^[0-9a-f]{20}$/)
    // Earnings wait in escrow for the settlement window (a day): pending, not yet settled.
    const ledger = async () =>
      ((await (await fetch(`${trackerUrl}/v1/dashboard/hosts/${hostId}`)).json()) as { pending_micro: number })
        .pending_micro
    await expect.poll(ledger, { timeout: 20_000 }).toBeGreaterThan(0)
    await open('earnings')
    const pending = page.getByTestId('earnings-pending')
    await expect
      .poll(async () => Number(await pending.getAttribute('data-micro')), { timeout: 20_000 })
      .toBe(await ledger())
    expect(await page.getByTestId('earnings-receipt').count()).toBeGreaterThan(0)
    await screenshot(page, 'earnings')
  })

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
      await apiKeyWorksWithCurl(page, trackerUrl, MODEL)
    },
  )

  it('refuses bad form input with a clear message and changes nothing', async () => {
    await open('settings')
    const threadsBefore = await page.getByTestId('settings-limit-threads').inputValue()
    await page.getByTestId('settings-limit-disk').fill('twenty')
    await page.getByTestId('settings-limits-save').click()
    await expect.poll(() => page.getByTestId('settings-limits-error').textContent()).toMatch(/disk/i)

    await page.getByTestId('settings-tracker-url').fill('http://127.0.0.1:9')
    await page.getByTestId('settings-tracker-save').click()
    // This computer hosts on the embedded swarm: a switch asks what to do with that first.
    expect(await page.getByTestId('settings-switch-hosting').textContent()).toContain('stories260k blocks [2, 5)')
    await page.getByTestId('settings-switch-resume').click()
    await expect
      .poll(() => page.getByTestId('settings-tracker-error').textContent(), { timeout: 15_000 })
      .toMatch(/127\.0\.0\.1:9/)
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
      const before = { appUrl, trackerUrl }
      await expect.poll(() => page.getByTestId('status-app').getAttribute('data-state')).toBe('ok')
      await app.stop(10_000)
      await expect.poll(() => page.getByTestId('status-app').getAttribute('data-state')).toBe('down')
      await screenshot(page, 'status-app-down')
      await startApp()
      trackerUrl = (await app.waitFor(/tracker (http:\/\/127\.0\.0\.1:\d+)/))[1] ?? ''
      // The same link, key included, and the same tracker (so the same OpenAI-compatible API) address.
      expect({ appUrl, trackerUrl }).toEqual(before)
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
      await page.goto(new URL(appUrl).origin)
      await page.getByTestId('app-ready').waitFor()
    },
  )

  it('asks once before the first chat on a public tracker, saying who sees what', async () => {
    const tracker = startNeuron(['tracker', '--port', '0', '--db', join(dir, 'public.sqlite')])
    publicTracker = tracker
    processes.push(tracker)
    const publicUrl = (await tracker.waitFor(/tracker listening on (http:\/\/127\.0\.0\.1:\d+)/))[1] ?? ''
    await open('settings')
    await page.getByTestId('settings-tracker-url').fill(publicUrl)
    await page.getByTestId('settings-tracker-save').click()
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
