import type { SavedSettings } from '../settings-store'

/**
 * The keys the embedded tracker admits besides this app's own (null: anyone who can reach it). Open to
 * the home network it never admits anyone: only the user's list and the apps paired with it.
 */
export function admittedKeys(saved: Pick<SavedSettings, 'allowedKeys' | 'lanOpen' | 'pairedApps'>): string[] | null {
  const paired = saved.pairedApps.filter((p) => p.role === 'asked').map((p) => p.key)
  if (saved.allowedKeys === null && !saved.lanOpen) return null
  return [...new Set([...(saved.allowedKeys ?? []), ...paired])]
}
