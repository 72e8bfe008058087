import { type KeyboardEvent, type ReactNode, useEffect, useId, useRef } from 'react'
import { dialogKeyAction } from './dialogKeys'

interface ConfirmDialogProps {
  title: string
  children: ReactNode
  /** The button that does it, named for what it does: "Delete", "Stop hosting". */
  confirmLabel: string
  onConfirm(): void
  onCancel(): void
  testId?: string
}

/**
 * An in-app confirmation before something that cannot be undone. An alertdialog: labelled by its title, described
 * by its text, focus on Cancel when it opens (the safe choice), kept inside while open, and back where it was after.
 */
export function ConfirmDialog({ title, children, confirmLabel, onConfirm, onCancel, testId }: ConfirmDialogProps) {
  const titleId = useId()
  const bodyId = useId()
  const box = useRef<HTMLDivElement>(null)
  const cancel = useRef<HTMLButtonElement>(null)
  useEffect(() => {
    const before = document.activeElement instanceof HTMLElement ? document.activeElement : null
    cancel.current?.focus()
    return () => before?.focus()
  }, [])
  const onKeyDown = (event: KeyboardEvent) => {
    const buttons = [...(box.current?.querySelectorAll('button') ?? [])]
    const action = dialogKeyAction(
      event.key,
      event.shiftKey,
      buttons.indexOf(document.activeElement as HTMLButtonElement),
      buttons.length,
    )
    if (action === null) return
    // Escape here cancels the dialog, not (on the Chat screen) the answer streaming
    event.stopPropagation()
    event.preventDefault()
    if (action.kind === 'cancel') onCancel()
    else buttons[action.index]?.focus()
  }
  return (
    <div className="dialog-backdrop">
      <div
        ref={box}
        className="dialog"
        role="alertdialog"
        aria-modal="true"
        aria-labelledby={titleId}
        aria-describedby={bodyId}
        onKeyDown={onKeyDown}
        data-testid={testId}
      >
        <h2 id={titleId}>{title}</h2>
        <div id={bodyId} className="dialog-body">
          {children}
        </div>
        <div className="dialog-actions">
          <button ref={cancel} type="button" className="button" onClick={onCancel} data-testid="dialog-cancel">
            Cancel
          </button>
          <button type="button" className="button danger" onClick={onConfirm} data-testid="dialog-confirm">
            {confirmLabel}
          </button>
        </div>
      </div>
    </div>
  )
}
