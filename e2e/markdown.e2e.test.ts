// An answer's Markdown in the real page, in Debian's Chromium: a conversation kept by `neuron app --headless`
// (saved through the app's own API, as the chat screen saves one) holds an answer with a table, a fenced block,
// links, an image and raw HTML. The page shows them as elements, copies a block's code, opens no URL by itself
// and runs none of the HTML (it shows as text). Screenshots under test-results/screenshots.
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Conversation } from '../protocol/chat'
import { buildUi } from '../test/build-ui'
import { scratchDir } from '../test/models'
import { type NeuronProcess, startNeuron } from '../test/processes'
import { appCall, HAVE_CHROMIUM, launchChromium, NEEDS_CHROMIUM, openScreen, screenshot } from './browser'

/** Nothing listens there: a request to it would show in `requests`, and could only come from the answer. */
const BAIT = 'http://127.0.0.1:9'
const CODE = 'const total = blocks.reduce((sum, b) => sum + b.bytes, 0)\nconsole.log(total, "bytes <ok>")'
const ANSWER = [
  '## Blocks served',
  '',
  '| model | blocks |',
  '|---|--:|',
  '| stories260k | **5** |',
  '',
  `Sum them:\n\n\`\`\`ts\n${CODE}\n\`\`\``,
  '',
  `Read [the docs](https://example.com/docs), not [this](javascript:window.__clicked=1) nor ![a cat](${BAIT}/cat.png).`,
  '',
  `<script>window.__ran = 1</script><img src="${BAIT}/x.png" onerror="window.__ran = 2">`,
].join('\n')

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let app: NeuronProcess | undefined
let browser: Browser | undefined
let page: Page
/** Every URL the page asked for outside the app's own origin. */
const requests: string[] = []

const conversation = (id: string, title: string, answer: string, status: 'done' | 'error'): Conversation => ({
  id,
  title,
  modelId: 'stories260k',
  messages: [
    { id: `${id}-u`, role: 'user', content: title, createdAt: 1 },
    { id: `${id}-a`, role: 'assistant', content: answer, createdAt: 2, status, modelId: 'stories260k' },
  ],
  createdAt: 1,
  updatedAt: 2,
})

async function openConversation(title: string): Promise<void> {
  await openScreen(page, 'chat')
  await page
    .locator('[data-testid="chat-conversation"]')
    .filter({ hasText: title })
    .getByRole('button', { name: title })
    .click()
  await page.getByTestId('chat-message').nth(1).waitFor()
}

describe.skipIf(!HAVE_CHROMIUM)(`an answer's Markdown in the app${NEEDS_CHROMIUM}`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-markdown-e2e-'))
    await buildUi(join(dir, 'renderer'))
    app = startNeuron(['app', '--headless', '--data-dir', join(dir, 'app'), '--threads', '1', '--no-open'], {
      NEURON_RENDERER_DIR: join(dir, 'renderer'),
    })
    const appUrl =
      (await app.waitFor(/Neuron is running at (http:\/\/127\.0\.0\.1:\d+\/\?key=[\w-]+)/, 120_000))[1] ?? ''
    browser = await launchChromium()
    page = await browser.newPage({ viewport: { width: 1280, height: 800 } })
    page.on('request', (request) => {
      if (new URL(request.url()).origin !== new URL(appUrl).origin) requests.push(request.url())
    })
    await page.goto(appUrl)
    await page.getByTestId('app-ready').waitFor()
    await appCall(page, 'conversations.save', {
      conversation: conversation('md-full', 'Show me Markdown', ANSWER, 'done'),
    })
    // An answer cut inside a fence, as a stream leaves it when it fails.
    await appCall(page, 'conversations.save', {
      conversation: conversation('md-cut', 'Cut mid-block', 'Here:\n\n```py\ndef f(x):\n    return x *', 'error'),
    })
    await page.reload()
    await page.getByTestId('app-ready').waitFor()
  })

  afterAll(async () => {
    await browser?.close()
    await app?.stop(5000)
    await cleanup()
  })

  it('shows a table, a heading and a code block with its language, and copies that block’s code alone', async () => {
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write'])
    await openConversation('Show me Markdown')
    const answer = page.getByTestId('chat-message').nth(1).getByTestId('chat-message-text')
    expect(await answer.locator('h2').textContent()).toBe('Blocks served')
    expect(await answer.locator('table th').allTextContents()).toEqual(['model', 'blocks'])
    expect(await answer.locator('table td').allTextContents()).toEqual(['stories260k', '5'])
    expect(await answer.getByTestId('chat-code-lang').textContent()).toBe('ts')
    expect(await answer.getByTestId('chat-code-block').textContent()).toBe(CODE)
    await answer.getByTestId('chat-code-copy').click()
    await expect.poll(() => page.evaluate(() => navigator.clipboard.readText())).toBe(CODE)
    expect(await answer.getByTestId('chat-code-copy').getAttribute('data-copied')).toBe('true')
    await screenshot(page, 'chat-markdown')
  })

  it('runs none of the answer’s HTML, loads no image, and links only to the web, outside the app', async () => {
    const answer = page.getByTestId('chat-message').nth(1).getByTestId('chat-message-text')
    expect(await answer.locator('script, img, iframe').count()).toBe(0)
    // The HTML is not dropped without a trace: it shows as the literal text the model wrote.
    expect(await answer.textContent()).toContain(
      `<script>window.__ran = 1</script><img src="${BAIT}/x.png" onerror="window.__ran = 2">`,
    )
    // The web link, and the image's link (to open it only if the user clicks), both opening outside the app.
    const links = await answer
      .locator('a')
      .evaluateAll((as) =>
        as.map((a) => [a.getAttribute('href'), a.getAttribute('target'), a.getAttribute('rel'), a.textContent]),
      )
    expect(links).toEqual([
      ['https://example.com/docs', '_blank', 'noopener noreferrer', 'the docs'],
      [`${BAIT}/cat.png`, '_blank', 'noopener noreferrer', '[image: a cat]'],
    ])
    // The javascript: link is its text, and clicking it does nothing.
    await answer.getByText('this', { exact: true }).click()
    expect(
      await page.evaluate(() => [(window as { __ran?: number }).__ran, (window as { __clicked?: number }).__clicked]),
    ).toEqual([undefined, undefined])
    expect(requests.filter((url) => url.startsWith(BAIT))).toEqual([])
  })

  it('shows an answer cut inside an open fence as the code so far', async () => {
    await openConversation('Cut mid-block')
    const answer = page.getByTestId('chat-message').nth(1)
    expect(await answer.getByTestId('chat-code-lang').textContent()).toBe('py')
    expect(await answer.getByTestId('chat-code-block').textContent()).toBe('def f(x):\n    return x *')
    await screenshot(page, 'chat-markdown-cut')
  })
})
