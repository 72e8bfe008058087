// The Chat screen as an LM Studio or Jan user expects it (issue 38), in its browser mode (e2e/app-harness.ts):
// a refusal in plain words, the sole model picked, max tokens capped to the model's context, Enter to send.
import { readFile } from 'node:fs/promises'
import type { Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Conversation } from '../protocol/app'
import { AppHarness, MODEL, PROMPT, words } from './app-harness'
import { HAVE_CHROMIUM, NEEDS_CHROMIUM, screenshot } from './browser'

const harness = new AppHarness()
let page: Page

const answers = () => page.locator('[data-testid="chat-message"][data-role="assistant"]')
const conversations = () => page.getByTestId('chat-conversation')

describe.skipIf(!HAVE_CHROMIUM)(`the Chat screen's everyday features${NEEDS_CHROMIUM}`, () => {
  beforeAll(async () => {
    await harness.start()
    page = harness.page
  }, 240_000)

  afterAll(() => harness.stop())

  it('picks the only model by itself and names it by its id, not its family', async () => {
    await harness.open('chat')
    const select = page.getByTestId('chat-model-select')
    await expect.poll(() => select.inputValue()).toBe(MODEL)
    const label = (await select.locator(`option[value="${MODEL}"]`).textContent()) ?? ''
    expect(label).toContain(MODEL)
    expect(label).not.toMatch(/^llama\b/)
  })

  it('says in plain words that no computer serves part of the model, without routing jargon', async () => {
    // Nobody serves blocks [2, 5) yet: this computer starts hosting them in the next test.
    await page.getByTestId('chat-input').fill('Hello there')
    await page.getByTestId('chat-send').click()
    const error = page.getByTestId('chat-thread').getByTestId('chat-error')
    await error.waitFor({ timeout: 60_000 })
    const text = (await error.textContent()) ?? ''
    expect(text).toContain(MODEL)
    expect(text).toMatch(/host (part of|the missing part of) the model yourself/i)
    for (const jargon of ['no route for blocks', 'KV', 'free session', 'ready host']) expect(text).not.toContain(jargon)
    await screenshot(page, 'chat-no-route')
  })

  it('keeps no empty "New chat" once the user leaves it or makes another', async () => {
    const before = await conversations().count()
    await page.getByTestId('chat-new').click()
    await page.getByTestId('chat-new').click()
    await page.getByTestId('chat-new').click()
    await expect.poll(() => conversations().count()).toBe(before + 1)
    // Leaving it for the conversation that has messages drops it.
    await conversations().filter({ hasText: 'Hello there' }).getByRole('button', { name: 'Hello there' }).click()
    await expect.poll(() => conversations().count()).toBe(before)
    expect(await conversations().filter({ hasText: 'New chat' }).count()).toBe(0)
  })

  it('sends with Enter, makes a new line with Shift+Enter, and never sends mid-composition', async () => {
    await harness.hostTheOtherBlocks()
    await page.getByTestId('chat-new').click()
    await harness.setSampling({ temperature: '0' })
    const input = page.getByTestId('chat-input')
    expect(await input.getAttribute('placeholder')).toMatch(/Enter to send, Shift\+Enter for a new line/)
    await input.fill('Once upon a time')
    await input.press('Shift+Enter')
    await input.pressSequentially('there was a cat.')
    expect(await input.inputValue()).toBe('Once upon a time\nthere was a cat.')
    // An Enter that ends an IME composition (e.g. picking a Japanese word) only ends it.
    await input.evaluate((box) =>
      box.dispatchEvent(new KeyboardEvent('keydown', { key: 'Enter', isComposing: true, bubbles: true })),
    )
    expect(await page.getByTestId('chat-message').count()).toBe(0)
    await input.press('Enter')
    await expect.poll(() => page.getByTestId('chat-message').first().textContent()).toContain('there was a cat.')
    await expect.poll(() => input.inputValue()).toBe('')
    await harness.lastAnswer()
    // Ctrl+Enter still sends.
    await input.fill('The dog ran.')
    await input.press('Control+Enter')
    await expect.poll(() => answers().count()).toBe(2)
    await harness.lastAnswer()
  })

  it("caps max tokens to what the model's context leaves instead of refusing a short prompt", async () => {
    await page.getByTestId('chat-new').click()
    const maxTokens = page.getByTestId('chat-max-tokens')
    // The field takes no more than the model's context (stories260k: 2048 tokens).
    await maxTokens.fill('4096')
    await expect.poll(() => page.getByTestId('chat-field-error-maxTokens').textContent()).toContain('from 1 to 2048')
    await maxTokens.fill('2048')
    await expect.poll(() => page.getByTestId('chat-field-error-maxTokens').count()).toBe(0)
    await page.getByTestId('chat-input').fill('Hi')
    const context = page.getByTestId('chat-context')
    await expect.poll(() => context.textContent()).toMatch(/^\d+ \+ \d+ tokens of 2048/)
    const [, prompt, answer] = ((await context.textContent()) ?? '').match(/^(\d+) \+ (\d+)/) ?? []
    expect(Number(prompt) + Number(answer)).toBe(2048)
    expect(await context.textContent()).toMatch(/capped/)
    expect(await context.getAttribute('data-over')).toBe('false')
    await page.getByTestId('chat-send').click()
    await expect.poll(() => answers().count()).toBe(1)
    expect(await page.locator('[data-testid="chat-error"][data-code="context_exceeded"]').count()).toBe(0)
    await page.getByTestId('chat-stop').click()
    // Stopped, maybe before its first token: done, with no error.
    await expect.poll(() => answers().last().getAttribute('data-status')).toBe('done')
    await screenshot(page, 'chat-max-tokens-capped')

    // A prompt past the context is refused; the refusal goes as soon as the draft changes.
    await page.getByTestId('chat-new').click()
    await maxTokens.fill('64')
    await page.getByTestId('chat-input').fill('The cat sat on the mat. '.repeat(400))
    await expect.poll(() => context.getAttribute('data-over')).toBe('true')
    await page.getByTestId('chat-send').click()
    const refusal = page.locator('[data-testid="chat-error"][data-code="context_exceeded"]')
    await refusal.waitFor()
    await page.getByTestId('chat-input').press('End')
    await page.getByTestId('chat-input').press('Backspace')
    await expect.poll(() => refusal.count()).toBe(0)
    await page.getByTestId('chat-input').fill('')
  })

  it('keeps every regenerated answer to page through; the one shown is kept, exported and continued from', async () => {
    await page.getByTestId('chat-new').click()
    await page.getByTestId('chat-input').fill('Once upon a time there was a dog.')
    await page.getByTestId('chat-input').press('Enter')
    const made = [await harness.lastAnswer()]
    for (const _ of [1, 2]) {
      await page.getByTestId('chat-regenerate').click()
      await expect
        .poll(() => page.getByTestId('chat-version').textContent())
        .toBe(`${made.length + 1}/${made.length + 1}`)
      made.push(await harness.lastAnswer())
    }
    expect(await answers().count()).toBe(1)
    await page.getByTestId('chat-version-previous').click()
    await expect.poll(() => page.getByTestId('chat-version').textContent()).toBe('2/3')
    const shown = async () => words(await answers().last().getByTestId('chat-message-text').textContent())
    expect(await shown()).toBe(words(made[1] ?? ''))
    await screenshot(page, 'chat-answer-versions')
    // Kept with the conversation: a fresh load shows the same answer, 2 of 3.
    await page.reload()
    await page.getByTestId('app-ready').waitFor()
    await harness.open('chat')
    await expect.poll(() => page.getByTestId('chat-version').textContent()).toBe('2/3')
    expect(await shown()).toBe(words(made[1] ?? ''))
    const [json] = await Promise.all([page.waitForEvent('download'), page.getByTestId('chat-export-json').click()])
    const exported = Conversation.parse(JSON.parse(await readFile((await json.path()) ?? '', 'utf8')))
    expect(words(exported.messages[1]?.content ?? '')).toBe(words(made[1] ?? ''))
    expect(exported.messages[1]?.alternatives).toHaveLength(2)
  })

  it('deletes one message, puts it back on Undo, and the conversation goes on without it', async () => {
    const messages = page.getByTestId('chat-message')
    expect(await messages.count()).toBe(2)
    await answers().last().hover()
    await answers().last().getByTestId('chat-delete-message').click()
    await expect.poll(() => messages.count()).toBe(1)
    await page.getByTestId('chat-undo').click()
    await expect.poll(() => messages.count()).toBe(2)
    expect(await page.getByTestId('chat-version').textContent()).toBe('2/3')
    // Deleted for good: gone after a fresh load too, and the next turn follows the one left.
    await answers().last().hover()
    await answers().last().getByTestId('chat-delete-message').click()
    await expect.poll(() => messages.count()).toBe(1)
    await screenshot(page, 'chat-message-deleted')
    await page.reload()
    await page.getByTestId('app-ready').waitFor()
    await harness.open('chat')
    await expect.poll(() => messages.count()).toBe(1)
    await page.getByTestId('chat-input').fill('The dog barked.')
    await page.getByTestId('chat-input').press('Enter')
    await harness.lastAnswer()
    expect(await messages.evaluateAll((ms) => ms.map((m) => m.getAttribute('data-role')))).toEqual([
      'user',
      'user',
      'assistant',
    ])
  })

  it(
    'ends an answer at a stop sequence set in the sampling settings, and says at the field what is ' + 'wrong',
    async () => {
      await page.getByTestId('chat-new').click()
      await harness.setSampling({ temperature: '0' })
      await page.getByTestId('chat-input').fill(PROMPT)
      await page.getByTestId('chat-input').press('Enter')
      const whole = words(await harness.lastAnswer())
      // A word that first shows (even inside another) well into the answer: the answer cut there is not empty.
      const word = whole.split(' ').find((w) => w.length >= 3 && whole.indexOf(w) > 10) ?? ''
      expect(word).not.toBe('')
      await harness.setSampling({ minP: '2', stop: 'a\nb\nc\nd\ne' })
      await expect.poll(() => page.getByTestId('chat-field-error-minP').textContent()).toContain('from 0 to 1')
      expect(await page.getByTestId('chat-field-error-stop').textContent()).toContain('up to 4')
      await screenshot(page, 'chat-sampling-errors')
      await harness.setSampling({ minP: '0.1', stop: word })
      await page.getByTestId('chat-input').focus()
      await expect.poll(() => page.getByTestId('chat-field-error-stop').count()).toBe(0)
      await expect.poll(() => page.getByTestId('chat-settings-toggle').textContent()).toContain('1 stop sequence')
      await page.getByTestId('chat-regenerate').click()
      await expect.poll(() => page.getByTestId('chat-version').textContent()).toBe('2/2')
      expect(words(await harness.lastAnswer())).toBe(words(whole.slice(0, whole.indexOf(word))))
    },
  )

  it(
    'imports a chat exported by the app (file picker) and an OpenAI-style one (dropped); a bad file ' +
      'changes nothing',
    async () => {
      const [download] = await Promise.all([
        page.waitForEvent('download'),
        page.getByTestId('chat-export-json').click(),
      ])
      const exported = Conversation.parse(JSON.parse(await readFile((await download.path()) ?? '', 'utf8')))
      const before = await conversations().count()
      await page.getByTestId('chat-import-file').setInputFiles((await download.path()) ?? '')
      await expect.poll(() => conversations().count()).toBe(before + 1)
      const shownTurns = () => page.getByTestId('chat-message-text').allTextContents()
      expect((await shownTurns()).map(words)).toEqual(
        exported.messages.filter((m) => m.content !== '').map((m) => words(m.content)),
      )

      const drop = async (name: string, text: string) => {
        const files = await page.evaluateHandle(
          ([name, text]) => {
            const transfer = new DataTransfer()
            transfer.items.add(new File([text], name, { type: 'application/json' }))
            return transfer
          },
          [name, text] as const,
        )
        await page.getByTestId('chat-conversations').dispatchEvent('drop', { dataTransfer: files })
      }
      const openAi = {
        messages: [
          { role: 'system', content: 'You are a pirate.' },
          { role: 'user', content: 'Where is the treasure?' },
          { role: 'assistant', content: 'Under the old oak, matey.' },
        ],
      }
      await drop('pirate.json', JSON.stringify(openAi))
      await expect.poll(() => conversations().count()).toBe(before + 2)
      expect(await shownTurns()).toEqual(['Where is the treasure?', 'Under the old oak, matey.'])
      await harness.setSampling({})
      expect(await page.getByTestId('chat-setting-system').inputValue()).toBe('You are a pirate.')

      await drop('notes.json', '{"text": "not a chat"}')
      await expect
        .poll(() => page.getByTestId('chat-import-error').textContent())
        .toContain('notes.json was not imported')
      expect(await conversations().count()).toBe(before + 2)
      await screenshot(page, 'chat-import-error')
      // The next good import clears it.
      await drop('pirate.json', JSON.stringify(openAi))
      await expect.poll(() => page.getByTestId('chat-import-error').count()).toBe(0)
    },
  )

  it(
    'saves the system prompt as a named preset, picks one in another chat, deletes one; kept across ' + 'a restart',
    async () => {
      await page.getByTestId('chat-new').click()
      await harness.setSampling({})
      const system = page.getByTestId('chat-setting-system')
      const presetOptions = () =>
        page.getByTestId('chat-preset-select').locator('option:not([disabled])').allTextContents()
      await system.fill('You tell short stories about pirates.')
      await page.getByTestId('chat-preset-save-open').click()
      await page.getByTestId('chat-preset-name').fill('Pirate')
      await page.getByTestId('chat-preset-save').click()
      await expect.poll(presetOptions).toEqual(['Pirate'])
      await system.fill('You explain things step by step.')
      await page.getByTestId('chat-preset-save-open').click()
      await page.getByTestId('chat-preset-name').fill('Tutor')
      await page.getByTestId('chat-preset-name').press('Enter')
      await expect.poll(presetOptions).toEqual(['Pirate', 'Tutor'])
      // A name is needed.
      await page.getByTestId('chat-preset-save-open').click()
      await page.getByTestId('chat-preset-name').fill(' ')
      await page.getByTestId('chat-preset-save').click()
      await expect.poll(() => page.getByTestId('chat-preset-error').textContent()).toContain('Name the preset first')
      await page.getByTestId('chat-preset-name').press('Escape')
      // Deleting the one picked, after a confirm.
      await expect.poll(() => page.getByTestId('chat-preset-select').inputValue()).toBe('Tutor')
      await page.getByTestId('chat-preset-delete').click()
      await page.getByTestId('chat-preset-delete-dialog').getByRole('button', { name: 'Delete' }).click()
      await expect.poll(presetOptions).toEqual(['Pirate'])

      // Another chat picks it: its system prompt is the preset's.
      await page.getByTestId('chat-input').fill('Ahoy')
      await page.getByTestId('chat-input').press('Enter')
      // Sent (its answer fails: nobody hosts the rest of the model in this run, or it streams) before leaving it.
      await page.getByTestId('chat-message').first().waitFor()
      await page.getByTestId('chat-new').click()
      await harness.setSampling({})
      expect(await system.inputValue()).toBe('')
      await page.getByTestId('chat-preset-select').selectOption('Pirate')
      await expect.poll(() => system.inputValue()).toBe('You tell short stories about pirates.')
      expect(await page.getByTestId('chat-settings-toggle').textContent()).toContain('system prompt set')
      await screenshot(page, 'chat-presets')

      await harness.app.stop(10_000)
      await harness.startApp()
      await page.reload()
      await page.getByTestId('app-ready').waitFor()
      await harness.open('chat')
      await harness.setSampling({})
      await expect.poll(presetOptions).toEqual(['Pirate'])
    },
  )

  it(
    'keeps the message column usable 390 px wide: it does not collapse, and the buttons wrap off the ' + 'meter',
    async () => {
      // A conversation with a long question and answer, shown before the window narrows.
      const long = 'Tell me about the sea and every ship that ever sailed on it, one by one. '.repeat(3)
      const chat = {
        messages: [
          { role: 'user', content: long },
          { role: 'assistant', content: long },
        ],
      }
      await page.getByTestId('chat-import-file').setInputFiles({
        name: 'sea.json',
        mimeType: 'application/json',
        buffer: Buffer.from(JSON.stringify(chat)),
      })
      await expect.poll(() => page.getByTestId('chat-message').count()).toBe(2)
      await page.setViewportSize({ width: 390, height: 844 })
      try {
        // Still on the chat screen (the sidebar is a drawer at this width), the list above the chat.
        await page.getByTestId('chat-input').fill('Once upon a time there was a little boat.')
        await page.getByTestId('chat-context').waitFor()
        const box = async (testId: string) =>
          (await page.getByTestId(testId).boundingBox()) ?? { x: 0, y: 0, width: 0, height: 0 }
        expect((await box('chat-thread')).width).toBeGreaterThan(300)
        for (const message of await page.getByTestId('chat-message').all())
          expect((await message.boundingBox())?.width).toBeGreaterThan(250)
        const meter = await box('chat-context')
        for (const button of ['chat-regenerate', 'chat-send']) {
          const b = await box(button)
          const apart =
            b.x >= meter.x + meter.width ||
            b.x + b.width <= meter.x ||
            b.y >= meter.y + meter.height ||
            b.y + b.height <= meter.y
          expect(apart, `${button} overlaps the token meter`).toBe(true)
        }
        // Nothing of the chat sticks out sideways: a message's actions stay inside the column.
        const overflow = await page.locator('.chat-main').evaluate((e) => e.scrollWidth - e.clientWidth)
        expect(overflow).toBeLessThanOrEqual(0)
        const main = await page.locator('.chat-main').boundingBox()
        for (const action of await page.getByTestId('chat-delete-message').all()) {
          const b = await action.boundingBox()
          expect((b?.x ?? 0) + (b?.width ?? 0)).toBeLessThanOrEqual((main?.x ?? 0) + (main?.width ?? 0))
        }
        await screenshot(page, 'chat-390')
      } finally {
        await page.setViewportSize({ width: 1280, height: 800 })
      }
    },
  )
})
