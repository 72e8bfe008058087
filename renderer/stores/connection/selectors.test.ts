import { describe, expect, it } from 'vitest'
import type { HostingStatus, TrackerLinkStatus } from '../../../protocol/app'
import { connectionText, statusParts } from './selectors'

const up: TrackerLinkStatus = { trackerUrl: 'http://127.0.0.1:7070', state: 'connected', problem: null, since: 0 }
const gone: TrackerLinkStatus = { ...up, state: 'unreachable', problem: 'no answer to a ping within 3 s' }
const serving: HostingStatus = {
  phase: 'serving',
  modelId: 'stories260k',
  blocks: [2, 5],
  artifacts: [],
  serving: null,
  error: null,
}
const idle: HostingStatus = { ...serving, phase: 'idle', modelId: null, blocks: null }
const states = (...args: Parameters<typeof statusParts>) => statusParts(...args).map((p) => [p.id, p.state, p.text])

describe('connection selectors', () => {
  it('tells the user whether the host is reachable', () => {
    expect(connectionText('open')).toBe('Connected')
    expect(connectionText('reconnecting')).toBe('Reconnecting…')
    expect(connectionText('connecting')).toBe('Connecting…')
  })

  it('shows the app, the tracker and hosting each as they are', () => {
    expect(states('open', up, serving)).toEqual([
      ['app', 'ok', 'App connected'],
      ['tracker', 'ok', 'Tracker connected'],
      ['hosting', 'ok', 'Hosting'],
    ])
    expect(states('open', up, idle).at(2)).toEqual(['hosting', 'off', 'Not hosting'])
    expect(statusParts('open', up, serving)[2]?.detail).toBe('stories260k, layers 3–5')
  })

  it(
    'says a dead tracker is unreachable, and that hosting ' + 'on it helps nobody, while the app itself is connected',
    () => {
      const parts = statusParts('open', gone, serving)
      expect(parts.map((p) => p.state)).toEqual(['ok', 'down', 'down'])
      expect(parts[1]?.detail).toContain('no answer to a ping')
      expect(parts[2]?.text).toBe('Hosting, but the tracker is unreachable')
    },
  )

  it('claims nothing of the tracker or hosting while the app’s backend is out of reach', () => {
    expect(states('reconnecting', up, serving)).toEqual([
      ['app', 'down', 'App unreachable, reconnecting…'],
      ['tracker', 'waiting', 'Tracker: unknown'],
      ['hosting', 'waiting', 'Hosting: unknown'],
    ])
  })
})
