import { spawn } from 'node:child_process'

/**
 * Why the browser is not opened here, or null when it may be: `--no-open`, CI, or (on Linux and
 * the BSDs) no display to show it on. Tests pass --no-open; a headless machine has no display.
 */
export function whyNotOpen(
  noOpen: boolean,
  env: NodeJS.ProcessEnv = process.env,
  platform: NodeJS.Platform = process.platform,
): string | null {
  if (noOpen) return '--no-open'
  if (env.CI !== undefined && env.CI !== '' && env.CI !== 'false') return 'CI is set'
  if (platform !== 'darwin' && platform !== 'win32' && !env.DISPLAY && !env.WAYLAND_DISPLAY)
    return 'no display (DISPLAY and WAYLAND_DISPLAY are unset)'
  return null
}

/** The OS's own way to open a link: open (macOS), start (Windows), xdg-open (elsewhere). */
export function openCommand(url: string, platform: NodeJS.Platform = process.platform): [string, string[]] {
  if (platform === 'darwin') return ['open', [url]]
  // start is a cmd built-in; its first quoted argument is a window title, hence the empty one.
  if (platform === 'win32') return ['cmd', ['/c', 'start', '""', url]]
  return ['xdg-open', [url]]
}

/** Opens `url` in the default browser, detached; a failure is logged, never thrown (the link is printed anyway). */
export function openBrowser(url: string, log: (line: string) => void): void {
  const [command, args] = openCommand(url)
  try {
    const child = spawn(command, args, { stdio: 'ignore', detached: true })
    child.once('error', (e) =>
      log(`could not open the browser with ${command} (${e.message}); open the link above yourself`),
    )
    child.unref()
  } catch (e) {
    log(
      `could not open the browser with ${command} (${e instanceof Error ? e.message : e}); open the link above ` +
        `yourself`,
    )
  }
}
