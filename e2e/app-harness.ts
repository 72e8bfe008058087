// The app in its browser mode, as a volunteer uses it, for e2e/app-*.e2e.test.ts: `neuron app --headless` (an
// embedded private tracker that publishes stories260K, and this computer's host) plus a second real host process
// serving blocks [0, 2), driven in Debian's Chromium. Each step saves a screenshot under test-results/screenshots.
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { expect } from 'vitest'
import { buildUi } from '../test/build-ui'
import { scratchDir } from '../test/models'
import { type NeuronProcess, startNeuron } from '../test/processes'
import { appCall, launchChromium, openScreen } from './browser'

export const MODEL = 'stories260k'
export const PROMPT = 'Tell me a story about a cat.'

/**
 * An answer's text as shown: rendered as Markdown, so compared with its blank lines and runs of spaces as one space.
 */
export const words = (text: string | null) => (text ?? '').replace(/\s+/g, ' ').trim()

export class AppHarness {
  dir = ''
  appUrl = ''
  trackerUrl = ''
  app!: NeuronProcess
  page!: Page
  /** Every process started, the app's restarts and the specs' own trackers too: stopped at the end, last first. */
  readonly processes: NeuronProcess[] = []
  /** Environment for the app process (a spec's HF_ENDPOINT), set before start. */
  env: NodeJS.ProcessEnv = {}
  private browser: Browser | undefined
  private cleanup: () => Promise<void> = async () => {}

  /**
   * The app and the other host, ready, and the app's page open in Chromium. `otherHost: false`: the app alone, for a
   * spec whose chats must go through this computer's host only.
   */
  async start({ otherHost = true }: { otherHost?: boolean } = {}): Promise<void> {
    ;({ dir: this.dir, cleanup: this.cleanup } = await scratchDir('neuron-e2e-'))
    // Its own build: dist/renderer may be rebuilt meanwhile by another checkout sharing it.
    await buildUi(join(this.dir, 'renderer'))
    await this.startApp()
    this.trackerUrl = (await this.app.waitFor(/tracker (http:\/\/127\.0\.0\.1:\d+)/))[1] ?? ''
    if (otherHost) await this.startOtherHost()
    this.browser = await launchChromium()
    this.page = await this.browser.newPage({ viewport: { width: 1280, height: 800 } })
    await this.page.goto(this.appUrl)
    await this.page.getByTestId('app-ready').waitFor()
  }

  /** Another volunteer already serves the first two blocks: the preview must show them covered. */
  private async startOtherHost(): Promise<void> {
    const other = startNeuron([
      'host',
      '--tracker',
      this.trackerUrl,
      '--data-dir',
      join(this.dir, 'other'),
      '--model',
      MODEL,
      '--blocks',
      '0:2',
      '--threads',
      '1',
    ])
    this.processes.push(other)
    await other.waitFor(/host [0-9a-f]{20} ready/, 120_000)
  }

  /** A page of its own in the same browser (another tab, without this one's cookie when `fresh`). */
  async newPage(viewport = { width: 1280, height: 800 }): Promise<Page> {
    if (this.browser === undefined) throw new Error('start the harness first')
    const context = await this.browser.newContext({ viewport })
    return context.newPage()
  }

  async stop(): Promise<void> {
    await this.browser?.close()
    for (const p of this.processes.reverse()) await p.stop(5000)
    await this.cleanup()
  }

  /** `neuron app --headless` on the same data dir every time: the same address (port and key) every run. */
  async startApp(): Promise<void> {
    this.app = startNeuron(['app', '--headless', '--data-dir', join(this.dir, 'app'), '--threads', '1', '--no-open'], {
      NEURON_RENDERER_DIR: join(this.dir, 'renderer'),
      ...this.env,
    })
    this.processes.push(this.app)
    // The printed link carries the key; the page swaps it for a cookie.
    this.appUrl =
      (await this.app.waitFor(/Neuron is running at (http:\/\/127\.0\.0\.1:\d+\/\?key=[\w-]+)/, 120_000))[1] ?? ''
  }

  open(screen: string): Promise<void> {
    return openScreen(this.page, screen)
  }

  /** Waits for the last answer to end and returns its shown text; it must have ended done. */
  async lastAnswer(): Promise<string> {
    const answer = this.page.locator('[data-testid="chat-message"][data-role="assistant"]').last()
    await answer.locator('xpath=self::*[@data-status="done" or @data-status="error"]').waitFor({ timeout: 90_000 })
    expect(await answer.getAttribute('data-status')).toBe('done')
    return (await answer.getByTestId('chat-message-text').textContent()) ?? ''
  }

  /** Sets the active conversation's sampling fields (the panel opens if folded). */
  async setSampling(fields: Record<string, string>): Promise<void> {
    if ((await this.page.getByTestId('chat-settings').getAttribute('open')) === null)
      await this.page.getByTestId('chat-settings-toggle').click()
    for (const [field, value] of Object.entries(fields))
      await this.page.getByTestId(`chat-setting-${field}`).fill(value)
  }

  /**
   * This computer hosts blocks [2, 5), the ones the other host leaves, so answers need both volunteers; returns once
   * it serves them. The hosting spec picks the same range on the Host screen.
   */
  async hostTheOtherBlocks(): Promise<void> {
    await this.host([2, 5])
  }

  /** This computer hosts `blocks` of the model; returns once it serves them. */
  async host(blocks: [number, number]): Promise<void> {
    await appCall(this.page, 'hosting.start', { modelId: MODEL, blocks })
    const phase = async () => ((await appCall(this.page, 'hosting.status', {})) as { phase: string }).phase
    // A loop, not expect.poll: this runs in the specs' beforeAll, outside any test.
    const deadline = Date.now() + 90_000
    while ((await phase()) !== 'serving') {
      if (Date.now() > deadline)
        throw new Error(`hosting blocks [${blocks}) is ${await phase()} after 90 s, not serving`)
      await new Promise((resolve) => setTimeout(resolve, 250))
    }
  }

  /** A new conversation with `prompt`, answered greedily as the chat spec's first answer is: the answer shown. */
  async chatGreedily(prompt: string): Promise<string> {
    await this.open('chat')
    await this.page.getByTestId('chat-new').click()
    await this.page.getByTestId('chat-model-select').selectOption(MODEL)
    await this.setSampling({ temperature: '0' })
    await this.page.getByTestId('chat-input').fill(prompt)
    await this.page.getByTestId('chat-send').click()
    return this.lastAnswer()
  }
}
