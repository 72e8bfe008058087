import { describe, expect, it } from 'vitest'
import { keyFromPasted, keyPage } from './key-page'

describe('the page that asks for the app’s key', () => {
  it('finds the key in what a person pastes: the key, the link, or the whole printed line', () => {
    const key = 'AbC-123_xyz'
    expect(keyFromPasted(key)).toBe(key)
    expect(keyFromPasted(`  ${key}\n`)).toBe(key)
    expect(keyFromPasted(`http://127.0.0.1:7071/?key=${key}`)).toBe(key)
    expect(keyFromPasted(`Neuron is running at http://127.0.0.1:7071/?key=${key}  `)).toBe(key)
    expect(keyFromPasted(`http://127.0.0.1:7071/chat?x=1&key=${key}#/chat`)).toBe(key)
    expect(keyFromPasted('   ')).toBeNull()
    expect(keyFromPasted(null)).toBeNull()
  })

  it('says where the key is kept, escaped, and marks the field only after a wrong key', () => {
    const page = keyPage({ keyFile: '/home/a<b>/.neuron/ui-key', refused: false })
    expect(page).toContain('/home/a&#60;b&#62;/.neuron/ui-key')
    expect(page).not.toContain('aria-describedby="key-error"')
    const refused = keyPage({ refused: true })
    expect(refused).toContain('aria-invalid="true" aria-describedby="key-error"')
    expect(refused).toContain('in the file <code>ui-key</code> in the app’s data folder')
  })
})
