import { describe, expect, it } from 'vitest'
import { openCommand, whyNotOpen } from './open-browser'

describe('opening the browser in browser mode', () => {
  it('opens one only where a person can see it: not with --no-open, not in CI, not without a display', () => {
    expect(whyNotOpen(true, { DISPLAY: ':0' }, 'linux')).toBe('--no-open')
    expect(whyNotOpen(false, { DISPLAY: ':0', CI: 'true' }, 'linux')).toBe('CI is set')
    expect(whyNotOpen(false, {}, 'linux')).toMatch(/no display/)
    expect(whyNotOpen(false, { WAYLAND_DISPLAY: 'wayland-0' }, 'linux')).toBeNull()
    expect(whyNotOpen(false, {}, 'darwin')).toBeNull()
  })

  it("uses each OS's own opener", () => {
    expect(openCommand('http://127.0.0.1:1/?key=k', 'linux')).toEqual(['xdg-open', ['http://127.0.0.1:1/?key=k']])
    expect(openCommand('http://127.0.0.1:1/?key=k', 'darwin')).toEqual(['open', ['http://127.0.0.1:1/?key=k']])
    expect(openCommand('http://127.0.0.1:1/?key=k', 'win32')[1]).toContain('start')
  })
})
