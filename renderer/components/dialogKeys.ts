/** What a key does inside a modal dialog of `count` focusable controls, the control at `index` focused. */
export type DialogKeyAction = { kind: 'cancel' } | { kind: 'focus'; index: number } | null

/** Escape cancels; Tab and Shift+Tab cycle through the dialog's controls so focus never leaves it. */
export function dialogKeyAction(key: string, shiftKey: boolean, index: number, count: number): DialogKeyAction {
  if (key === 'Escape') return { kind: 'cancel' }
  if (key !== 'Tab' || count === 0) return null
  const from = index < 0 ? (shiftKey ? 0 : count - 1) : index
  return { kind: 'focus', index: (from + (shiftKey ? count - 1 : 1)) % count }
}
