import { describe, expect, it } from 'vitest'
import { connectionText } from './selectors'

describe('connection selectors', () => {
  it('tells the user whether the host is reachable', () => {
    expect(connectionText('open')).toBe('Connected')
    expect(connectionText('reconnecting')).toBe('Reconnecting…')
    expect(connectionText('connecting')).toBe('Connecting…')
  })
})
