// The app's Chat screen in its browser mode (e2e/app-harness.ts), on a swarm where this computer serves the blocks
// the other volunteer leaves: answers equal the swarm client's, sampling, editing and export, and refusals.
import { readFile } from 'node:fs/promises'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { NodeIdentity } from '../identity/keys'
import { Conversation } from '../protocol/app'
import { renderChat } from '../text/chat-template'
import { AppHarness, MODEL, PROMPT, words } from './app-harness'
import { HAVE_CHROMIUM, NEEDS_CHROMIUM, screenshot } from './browser'

const harness = new AppHarness()
let page: Page
const open = (screen: string) => harness.open(screen)

describe.skipIf(!HAVE_CHROMIUM)(`the app in a browser against a headless host${NEEDS_CHROMIUM}`, () => {
  beforeAll(async () => {
    await harness.start()
    page = harness.page
    await harness.hostTheOtherBlocks()
  }, 240_000)

  afterAll(() => harness.stop())

  it("streams a chat answer equal to the swarm client's greedy output", async () => {
    await open('chat')
    await page.getByTestId('chat-new').click()
    await page.getByTestId('chat-model-select').selectOption(MODEL)
    // Greedy: the default temperature (0.7) samples, and this compares with the client's greedy output.
    await harness.setSampling({ temperature: '0' })
    await page.getByTestId('chat-input').fill(PROMPT)
    // The prompt's tokens are counted as the user types, against the model's 2048-token context.
    await expect.poll(() => page.getByTestId('chat-context').textContent()).toMatch(/^\d+ \+ 64 tokens of 2048$/)
    await page.getByTestId('chat-send').click()
    const shown = await harness.lastAnswer()

    const client = await SwarmClient.connect(harness.trackerUrl, NodeIdentity.generate())
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
    await harness.setSampling({ temperature: '1', seed: '1' })
    await page.getByTestId('chat-input').fill('Once upon a time there was a dog.')
    await page.getByTestId('chat-send').click()
    const first = await harness.lastAnswer()
    await harness.setSampling({ seed: '2' })
    const before = await page.locator('[data-testid="chat-message"][data-role="assistant"]').last().elementHandle()
    await page.getByTestId('chat-regenerate').click()
    // The first answer is replaced by a new one.
    await expect.poll(() => before?.evaluate((e) => e.isConnected)).toBe(false)
    const second = await harness.lastAnswer()
    expect(first.length).toBeGreaterThan(0)
    expect(second.length).toBeGreaterThan(0)
    expect(second).not.toBe(first)
    expect(await page.getByTestId('chat-message').count()).toBe(2)
    expect(await page.getByTestId('chat-thread').getAttribute('aria-live')).toBe('polite')
    await screenshot(page, 'chat-sampling')
  })

  it('copies an answer, edits and resends a turn, renames, finds and exports the conversation', async () => {
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'])
    const shown = await harness.lastAnswer()
    await page.getByTestId('chat-copy').last().click()
    await expect.poll(async () => words(await page.evaluate(() => navigator.clipboard.readText()))).toBe(words(shown))

    await page.getByTestId('chat-edit').first().click()
    await page.getByTestId('chat-edit-input').fill('Once upon a time there was a cat.')
    await page.getByTestId('chat-edit-send').click()
    await expect
      .poll(() => page.getByTestId('chat-message').first().textContent())
      .toBe('Once upon a time there was a cat.')
    await harness.lastAnswer()
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
      // Max tokens may be emptied while typing; what is not a valid value says so (its bound: the model's context),
      // and sending waits for it.
      await page.getByTestId('chat-input').fill('Hi')
      await page.getByTestId('chat-max-tokens').fill('')
      await expect
        .poll(() => page.getByTestId('chat-field-error-maxTokens').textContent())
        .toBe('Max tokens takes a whole number from 1 to 2048; it is empty.')
      await page.getByTestId('chat-send').click()
      await expect.poll(() => page.locator('[data-testid="chat-error"][data-code="invalid_field"]').count()).toBe(1)
      expect(await page.getByTestId('chat-message').count()).toBe(0)
      await page.getByTestId('chat-max-tokens').fill('64')
      await expect.poll(() => page.getByTestId('chat-field-error-maxTokens').count()).toBe(0)
      await page.getByTestId('chat-input').fill('')
    },
  )
})
