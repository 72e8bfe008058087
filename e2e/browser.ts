import { existsSync } from 'node:fs'
import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { type Browser, chromium, type Page } from 'playwright-core'
import { REPO_ROOT } from '../test/models'

/** Debian's Chromium: Playwright's own browser downloads are not reachable from CI machines. */
export const CHROMIUM = '/usr/bin/chromium'
export const HAVE_CHROMIUM = existsSync(CHROMIUM)
export const NEEDS_CHROMIUM = HAVE_CHROMIUM ? '' : ` (skipped: ${CHROMIUM} is absent; apt-get install -y chromium)`
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
]

/** Screenshots land here; CI keeps the folder as an artifact. */
export const SCREENSHOTS = join(REPO_ROOT, 'test-results', 'screenshots')

/** `executablePath`: Chromium itself, or a script that runs it elsewhere (in a network namespace). */
export function launchChromium(executablePath = CHROMIUM): Promise<Browser> {
  return chromium.launch({ executablePath, args: FLAGS, headless: true })
}

export async function screenshot(page: Page, name: string): Promise<void> {
  await mkdir(SCREENSHOTS, { recursive: true })
  await page.screenshot({ path: join(SCREENSHOTS, `${name}.png`), fullPage: true })
}

/** Goes to a screen by its sidebar entry and waits for it to show. */
export async function openScreen(page: Page, screen: string): Promise<void> {
  await page.getByTestId(`nav-${screen}`).click()
  await page.getByTestId(`screen-${screen}`).waitFor()
}

/** One AppApi call over the page's own /api WebSocket (its cookie admits it), as the renderer makes them. */
export async function appCall(page: Page, method: string, input: unknown): Promise<unknown> {
  return page.evaluate(
    ([method, input]) =>
      new Promise((resolve, reject) => {
        const socket = new WebSocket(`ws://${location.host}/api`)
        socket.onopen = () => socket.send(JSON.stringify({ kind: 'call', id: 1, method, input }))
        socket.onmessage = (message) => {
          const frame = JSON.parse(String(message.data)) as {
            kind: string
            ok?: boolean
            value?: unknown
            error?: { message: string }
          }
          if (frame.kind !== 'reply') return
          socket.close()
          if (frame.ok === true) resolve(frame.value)
          else reject(new Error(frame.error?.message ?? 'failed'))
        }
        socket.onerror = () => reject(new Error('the /api socket failed'))
      }),
    [method, input] as const,
  )
}
