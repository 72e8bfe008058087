// Two computers of one home: two `neuron app --headless` processes in two network namespaces joined by
// a veth pair (10.77.0.0/24, multicast routed), each driven in its own Chromium running in its namespace
// (the UI listens on that namespace's loopback). They find each other by mDNS, pair with a code shown on
// both screens, and serve one model together. Screenshots land in test-results/screenshots.
import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { buildUi } from '../test/build-ui'
import { scratchDir } from '../test/models'
import { chromiumIn, createHomeLan, type HomeComputer, whyNoNamespaces } from '../test/network/home-lan'
import { type NeuronProcess, startNeuron } from '../test/processes'
import { appCall, CHROMIUM, HAVE_CHROMIUM, launchChromium, NEEDS_CHROMIUM, SCREENSHOTS, screenshot } from './browser'

const MODEL = 'stories260k'
const NO_NAMESPACES = whyNoNamespaces()
const NEEDS_NAMESPACES = NO_NAMESPACES === null ? '' : ` (skipped: ${NO_NAMESPACES})`
/** Unique per run: interface names stay under 15 characters. */
const PREFIX = `nl${process.pid % 100_000}`

interface Computer {
  readonly net: HomeComputer
  readonly app: NeuronProcess
  readonly browser: Browser
  readonly page: Page
  key: string
}

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let lan: ReturnType<typeof createHomeLan> | undefined
const computers: Computer[] = []
let a: Computer
let b: Computer
let trackerPortOfA = 0

async function startComputer(net: HomeComputer, name: string): Promise<Computer> {
  const app = startNeuron(
    ['app', '--headless', '--data-dir', join(dir, name), '--port', '0', '--threads', '1', '--no-open'],
    {},
    net.exec,
  )
  const url = (await app.waitFor(/Neuron is running at (http:\/\/127\.0\.0\.1:\d+\/\?key=[\w-]+)/, 120_000))[1] ?? ''
  const browser = await launchChromium(await chromiumIn(net, dir, CHROMIUM))
  const page = await browser.newPage({ viewport: { width: 1280, height: 860 } })
  const computer = { net, app, browser, page, key: '' }
  computers.push(computer)
  await page.goto(url)
  await page.getByTestId('app-ready').waitFor()
  return computer
}

async function open(page: Page, screen: string): Promise<void> {
  await page.getByTestId(`nav-${screen}`).click()
  await page.getByTestId(`screen-${screen}`).waitFor()
}

describe.skipIf(!HAVE_CHROMIUM || NO_NAMESPACES !== null)(
  `two apps of one home pair by a code and share a swarm${NEEDS_CHROMIUM}${NEEDS_NAMESPACES}`,
  () => {
    beforeAll(async () => {
      ;({ dir, cleanup } = await scratchDir('neuron-lan-e2e-'))
      await buildUi()
      lan = createHomeLan(PREFIX)
      const [netA, netB] = lan.computers
      a = await startComputer(netA, 'a')
      b = await startComputer(netB, 'b')
      for (const c of [a, b]) c.key = ((await appCall(c.page, 'settings.get', {})) as { publicKey: string }).publicKey
    }, 240_000)

    afterAll(async () => {
      for (const c of computers) await c.browser.close().catch(() => {})
      for (const c of computers) await c.app.stop(5000)
      // What each app printed, for a failed step: beside the screenshots.
      await mkdir(SCREENSHOTS, { recursive: true })
      for (const c of computers) await writeFile(join(SCREENSHOTS, `lan-${c.net.ns.slice(-1)}.log`), c.app.output())
      lan?.destroy()
      await cleanup()
    })

    it('opens each embedded swarm to the home network from the Settings switch', async () => {
      for (const c of [a, b]) {
        await open(c.page, 'settings')
        const toggle = c.page.getByTestId('settings-lan-open')
        expect(await toggle.isChecked()).toBe(false)
        await toggle.click()
        await expect.poll(() => toggle.isChecked(), { timeout: 60_000 }).toBe(true)
        await expect.poll(() => toggle.isDisabled(), { timeout: 60_000 }).toBe(false)
      }
      // The embedded tracker now listens on every interface of its namespace.
      trackerPortOfA = Number((await a.app.waitFor(/open to the home network: tracker port (\d+)/))[1])
      expect(trackerPortOfA).toBeGreaterThan(0)
      await a.page.getByTestId('settings-lan-open').scrollIntoViewIfNeeded()
      await screenshot(a.page, 'lan-settings')
    })

    it("shows each app on the other's Swarm screen, found by mDNS at its namespace's address", async () => {
      for (const [c, other] of [
        [a, b],
        [b, a],
      ] as const) {
        await open(c.page, 'swarm')
        const row = c.page.locator(`[data-testid="lan-peer"][data-key="${other.key}"]`)
        await row.waitFor({ timeout: 30_000 })
        expect(await row.textContent()).toContain(other.net.address)
        expect(await row.getAttribute('data-state')).toBe('not paired')
        // Both computers share a hostname here: each name carries its host id's short form, so they differ.
        const hostId = ((await appCall(other.page, 'settings.get', {})) as { hostId: string }).hostId
        expect(await row.locator('strong').textContent()).toMatch(new RegExp(` · ${hostId.slice(0, 8)}$`))
        // An app never lists itself.
        expect(await c.page.locator(`[data-testid="lan-peer"][data-key="${c.key}"]`).count()).toBe(0)
      }
    })

    it('shows the same code on both screens when B asks to join A', async () => {
      await b.page.locator(`[data-testid="lan-peer"][data-key="${a.key}"]`).getByTestId('lan-peer-pair').click()
      const codeOnB = b.page.getByTestId('lan-pairing-code')
      const codeOnA = a.page.getByTestId('lan-pairing-code')
      await codeOnB.waitFor({ timeout: 15_000 })
      await codeOnA.waitFor({ timeout: 15_000 })
      const code = await codeOnB.getAttribute('data-code')
      expect(code).toMatch(/^\d{6}$/)
      expect(await codeOnA.getAttribute('data-code')).toBe(code)
      expect(await a.page.getByTestId('lan-pairing').getAttribute('data-role')).toBe('asked')
      await screenshot(a.page, 'lan-pairing-code-asked')
      await screenshot(b.page, 'lan-pairing-code-asking')
    })

    it("joins B to A's swarm once both users confirmed", async () => {
      await b.page.getByTestId('lan-pairing-confirm').click()
      await a.page.getByTestId('lan-pairing-confirm').click()
      // B's tracker is now A's embedded one, at A's address on the home network, joined with B's own key.
      await b.app.waitFor(new RegExp(`tracker http://10\\.77\\.0\\.1:${trackerPortOfA}`), 60_000)
      const settingsOfB = async () =>
        (await appCall(b.page, 'settings.get', {})) as { trackerUrl: string | null; publicKey: string }
      // The setting is in force once the switch returned, a moment after the new tracker is joined.
      await expect
        .poll(async () => (await settingsOfB()).trackerUrl, { timeout: 30_000 })
        .toBe(`http://10.77.0.1:${trackerPortOfA}`)
      expect((await settingsOfB()).publicKey).toBe(b.key)
      // B's sidebar names the tracker it joined at once, without a reload.
      await expect
        .poll(() => b.page.getByTestId('status-tracker-address').textContent(), { timeout: 10_000 })
        .toBe(`Tracker · 10.77.0.1:${trackerPortOfA}`)
      const lanOfA = (await appCall(a.page, 'lan.get', {})) as { paired: { key: string; role: string }[] }
      expect(lanOfA.paired).toEqual([expect.objectContaining({ key: b.key, role: 'asked' })])
    })

    it('serves blocks 0:3 on A and 3:5 on B, and shows both computers on the Swarm screen', async () => {
      await appCall(a.page, 'hosting.start', { modelId: MODEL, blocks: [0, 3] })
      await appCall(b.page, 'hosting.start', { modelId: MODEL, blocks: [3, 5] })
      // Each computer fetches its range's artifacts by BitTorrent from A's seed, then loads them.
      for (const c of [a, b]) {
        const phase = async () => JSON.stringify(await appCall(c.page, 'hosting.status', {}))
        await expect.poll(phase, { timeout: 150_000, interval: 2_000 }).toMatch(/"phase":"serving"/)
      }
      await open(a.page, 'swarm')
      await expect.poll(() => a.page.getByTestId('swarm-host').count(), { timeout: 30_000 }).toBe(2)
      const who = await a.page.getByTestId('swarm-host-who').allTextContents()
      // this computer, and the paired one by its name
      expect(who).toHaveLength(2)
      expect(who.filter((w) => w === 'this computer')).toHaveLength(1)
      const hostIdOfB = ((await appCall(b.page, 'settings.get', {})) as { hostId: string }).hostId
      expect(who.find((w) => w !== 'this computer')).toMatch(new RegExp(`\\S · ${hostIdOfB.slice(0, 8)}$`))
      await screenshot(a.page, 'lan-swarm')
    }, 360_000)

    it("answers A's chat through a route split across both computers", async () => {
      await open(a.page, 'chat')
      await a.page.getByTestId('chat-new').click()
      await a.page.getByTestId('chat-model-select').selectOption(MODEL)
      await a.page.getByTestId('chat-input').fill('Tell me a story about a cat.')
      await a.page.getByTestId('chat-send').click()
      const answer = a.page.locator('[data-testid="chat-message"][data-role="assistant"]').last()
      await answer.locator('xpath=self::*[@data-status="done" or @data-status="error"]').waitFor({ timeout: 90_000 })
      await screenshot(a.page, 'lan-chat')
      expect(await answer.getAttribute('data-status'), (await answer.textContent()) ?? '').toBe('done')
      expect(await a.page.getByTestId('chat-route').last().getByTestId('chat-hop').count()).toBe(2)
    })
  },
)
