/**
 * Where a navigation or window.open from the page may go: 'app' stays (the app's own page, any hash),
 * 'external' opens in the OS browser (http, https, mailto), everything else is denied.
 */
export type NavigationVerdict = 'app' | 'external' | 'deny'

export function judgeNavigation(url: string, appUrl: string): NavigationVerdict {
  let target: URL
  try {
    target = new URL(url)
  } catch {
    return 'deny'
  }
  const app = new URL(appUrl)
  if (target.protocol === app.protocol && target.host === app.host && target.pathname === app.pathname) return 'app'
  if (target.protocol === 'https:' || target.protocol === 'http:' || target.protocol === 'mailto:') return 'external'
  return 'deny'
}
