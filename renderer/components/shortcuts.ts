/**
 * Ctrl/⌘+1…9 switch screens only in the desktop app: in a browser those keys switch its tabs before the page sees
 * them, so the browser mode neither binds nor advertises them.
 */
export const SCREEN_SHORTCUTS = typeof window !== 'undefined' && window.neuron !== undefined

export const isMac = typeof navigator !== 'undefined' && /Mac|iPhone|iPad/.test(navigator.platform)
