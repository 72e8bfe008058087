import { createElement } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import { ConfirmDialog } from './ConfirmDialog'
import { dialogKeyAction } from './dialogKeys'

describe('the confirmation dialog', () => {
  it('is a modal alertdialog named by its title and described by its text, Cancel first', () => {
    const props = {
      title: 'Stop hosting?',
      confirmLabel: 'Stop hosting',
      onConfirm() {},
      onCancel() {},
      children: 'This computer stops serving.',
    }
    const html = renderToStaticMarkup(createElement(ConfirmDialog, props))
    expect(html).toContain('role="alertdialog"')
    expect(html).toContain('aria-modal="true"')
    const labelledBy = /aria-labelledby="([^"]+)"/.exec(html)?.[1]
    const describedBy = /aria-describedby="([^"]+)"/.exec(html)?.[1]
    expect(html).toContain(`<h2 id="${labelledBy}">Stop hosting?</h2>`)
    expect(html).toContain(`id="${describedBy}" class="dialog-body">This computer stops serving.</div>`)
    expect(html.indexOf('dialog-cancel')).toBeLessThan(html.indexOf('dialog-confirm'))
    expect(html).toContain('>Stop hosting</button>')
  })

  it('cancels on Escape and keeps Tab and Shift+Tab cycling inside it', () => {
    expect(dialogKeyAction('Escape', false, 0, 2)).toEqual({ kind: 'cancel' })
    expect(dialogKeyAction('Tab', false, 0, 2)).toEqual({ kind: 'focus', index: 1 })
    expect(dialogKeyAction('Tab', false, 1, 2)).toEqual({ kind: 'focus', index: 0 })
    expect(dialogKeyAction('Tab', true, 0, 2)).toEqual({ kind: 'focus', index: 1 })
    // focus somehow outside: Tab comes back to the first control, Shift+Tab to the last
    expect(dialogKeyAction('Tab', false, -1, 2)).toEqual({ kind: 'focus', index: 0 })
    expect(dialogKeyAction('Tab', true, -1, 2)).toEqual({ kind: 'focus', index: 1 })
    expect(dialogKeyAction('Enter', false, 0, 2)).toBeNull()
  })
})
