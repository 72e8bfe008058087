// What a user sees cut or drawn over something else on a page, measured in the browser: for the screenshot specs
// of narrow and wide windows (e2e/app-shell.e2e.test.ts).
import type { Page } from 'playwright-core'

/**
 * The page's layout faults, in words: a page wider than its window, a control or heading reaching past the window's
 * edges, two drawn over each other, and the sidebar's status spilling out of its box; each measured as drawn, cut by
 * the boxes that clip it (a part scrolled out of a scrolling box is not drawn, and can be scrolled to). Empty when
 * nothing is cut or overlapping.
 */
export function layoutProblems(page: Page): Promise<string[]> {
  return page.evaluate(() => {
    const problems: string[] = []
    const width = window.innerWidth
    const pageWidth = document.documentElement.scrollWidth
    if (pageWidth > width + 1) problems.push(`the page is ${pageWidth} px wide in a ${width} px window`)
    /** The part of `el` drawn: its box cut by every ancestor that clips (a scrolling thread, a table's panel). */
    const drawn = (el: Element): DOMRect | null => {
      const style = getComputedStyle(el)
      if (style.visibility === 'hidden' || el.closest('[hidden]') !== null) return null
      // Inside a folded <details>, only its summary is drawn.
      const folded = el.closest('details:not([open])')
      if (folded !== null && el.closest('summary')?.parentElement !== folded) return null
      const r = el.getBoundingClientRect()
      let [left, top, right, bottom] = [r.left, r.top, r.right, r.bottom]
      for (let p = el.parentElement; p !== null && p !== document.body; p = p.parentElement) {
        const s = getComputedStyle(p)
        if (s.overflowX === 'visible' && s.overflowY === 'visible') continue
        const c = p.getBoundingClientRect()
        left = Math.max(left, c.left)
        top = Math.max(top, c.top)
        right = Math.min(right, c.right)
        bottom = Math.min(bottom, c.bottom)
      }
      return right - left > 1 && bottom - top > 1 ? new DOMRect(left, top, right - left, bottom - top) : null
    }
    const name = (el: Element) =>
      el.getAttribute('data-testid') ??
      el.getAttribute('aria-label') ??
      `${el.tagName.toLowerCase()} "${(el.textContent ?? '').trim().slice(0, 30)}"`
    const selector =
      'main button, main input:not([type="hidden"]), main select, main textarea, main h1, main h2, ' +
      '[data-testid="chat-context"], .topbar button'
    const controls = [...document.querySelectorAll(selector)]
      .map((el) => ({ el, r: drawn(el) }))
      .filter((c): c is { el: Element; r: DOMRect } => c.r !== null)
    for (const { el, r } of controls) {
      if (r.right > width + 1 || r.left < -1)
        problems.push(
          `${name(el)} reaches past the window (${Math.round(r.left)} to ${Math.round(r.right)} of ${width})`,
        )
    }
    for (let i = 0; i < controls.length; i++) {
      for (let j = i + 1; j < controls.length; j++) {
        const a = controls[i] as { el: Element; r: DOMRect }
        const b = controls[j] as { el: Element; r: DOMRect }
        if (a.el.contains(b.el) || b.el.contains(a.el)) continue
        const w = Math.min(a.r.right, b.r.right) - Math.max(a.r.left, b.r.left)
        const h = Math.min(a.r.bottom, b.r.bottom) - Math.max(a.r.top, b.r.top)
        if (w > 2 && h > 2)
          problems.push(`${name(a.el)} and ${name(b.el)} overlap (${Math.round(w)}×${Math.round(h)} px)`)
      }
    }
    const status = document.querySelector('.status-line')
    const sidebar = document.querySelector('.sidebar')
    const box = sidebar === null ? null : drawn(sidebar)
    if (status !== null && box !== null) {
      for (const part of [status, ...status.querySelectorAll('.status-part, .status-tracker')]) {
        if (drawn(part) === null) continue
        const r = part.getBoundingClientRect()
        if (r.left < box.left - 1 || r.right > box.right + 1)
          problems.push(`the sidebar's ${name(part)} spills out of the sidebar`)
      }
    }
    return problems
  })
}

/** Opens a screen from the sidebar, through the menu button where the window is narrow enough to fold it away. */
export async function openOnAnyWidth(page: Page, screen: string): Promise<void> {
  // Right after a resize the app may not have redrawn for the new width yet: wait until it has.
  await page.waitForFunction(
    () =>
      (document.querySelector('.app')?.getAttribute('data-layout') === 'layout-narrow') ===
      window.matchMedia('(max-width: 700px)').matches,
  )
  if ((await page.getByTestId('app-ready').getAttribute('data-layout')) === 'layout-narrow') {
    await page.getByTestId('nav-menu').click()
    await page.locator('.nav-open .sidebar').waitFor()
  }
  await page.getByTestId(`nav-${screen}`).click()
  await page.getByTestId(`screen-${screen}`).waitFor()
  // The drawer slides away: measure and draw the screen once it has.
  await page.waitForFunction(
    () =>
      (document.querySelector('.sidebar')?.getBoundingClientRect().right ?? 0) <= 0 ||
      !document.querySelector('.app')?.classList.contains('layout-narrow'),
  )
}
