import { describe, expect, it } from 'vitest'
import type { HostingStatus } from '../../../protocol/app'
import { someSettings } from '../../../test/renderer/settings-fixtures'
import { gbText, limitsFromForm, limitsToForm } from './limitsForm'
import {
  EMBEDDED_SWARM,
  hostingLeftBySwitch,
  identityFileName,
  savedMessage,
  showsSaved,
  trackerLabel,
  trackerShort,
  trackerUrlProblem,
} from './selectors'

describe('settings selectors', () => {
  it('calls an empty tracker URL the embedded private swarm', () => {
    expect(trackerLabel(someSettings)).toBe(EMBEDDED_SWARM)
    expect(trackerLabel({ ...someSettings, trackerUrl: 'https://tracker.example.org' })).toBe(
      'https://tracker.example.org',
    )
    expect(trackerShort(someSettings)).toBe('Embedded swarm · 127.0.0.1:43111')
    expect(
      trackerShort({
        ...someSettings,
        trackerUrl: 'https://tracker.example.org',
        connectedTrackerUrl: 'https://tracker.example.org',
      }),
    ).toBe('Tracker · tracker.example.org')
  })

  it('rejects a tracker URL that is not a full http(s) URL', () => {
    expect(trackerUrlProblem('')).toBeNull()
    expect(trackerUrlProblem('http://127.0.0.1:7070')).toBeNull()
    expect(trackerUrlProblem('tracker.example.org')).toContain('full http(s) URL')
    expect(trackerUrlProblem('ftp://x')).toContain('full http(s) URL')
  })

  it('names the identity backup after the host and shows "Saved" only briefly', () => {
    expect(identityFileName(someSettings)).toBe('neuron-identity-0123456789abcdef0123.pem')
    expect(showsSaved(1_000, 2_000)).toBe(true)
    expect(showsSaved(1_000, 5_000)).toBe(false)
    expect(savedMessage('lan')).toBe('Home network setting saved')
    expect(savedMessage(null)).toBe('Saved')
  })
})

describe('limits form', () => {
  it('round-trips the limits through the form in GB, empty meaning no limit, changing nothing', () => {
    const form = limitsToForm(someSettings.limits)
    expect(form).toEqual({ diskGb: '20', memoryGb: '', threads: '8', useGpu: true })
    expect(limitsFromForm(form, someSettings.limits)).toEqual({ changes: {} })
  })

  it('shows odd byte sizes exactly, so an untouched form saves the same bytes back', () => {
    const limits = { diskBytes: 17_179_869_184, memoryBytes: 4_000_001, threads: 4, useGpu: false }
    const form = limitsToForm(limits)
    expect(form).toMatchObject({ diskGb: '17.179869184', memoryGb: '0.004000001' })
    expect(limitsFromForm(form, limits)).toEqual({ changes: {} })
    expect(gbText(1)).toBe('0.000000001')
  })

  it('sends only the fields the user changed, in bytes', () => {
    const form = limitsToForm(someSettings.limits)
    expect(limitsFromForm({ ...form, memoryGb: '12.5' }, someSettings.limits)).toEqual({
      changes: { memoryBytes: 12_500_000_000 },
    })
    expect(limitsFromForm({ ...form, diskGb: ' ', useGpu: false }, someSettings.limits)).toEqual({
      changes: { diskBytes: null, useGpu: false },
    })
    expect(limitsFromForm({ ...form, threads: '4' }, someSettings.limits)).toEqual({ changes: { threads: 4 } })
    expect(limitsFromForm({ ...form, diskGb: '1.0000000006' }, someSettings.limits)).toEqual({
      changes: { diskBytes: 1_000_000_001 },
    })
  })

  it('explains each bad value at its own field', () => {
    const form = limitsToForm(someSettings.limits)
    const from = (change: Partial<typeof form>) => limitsFromForm({ ...form, ...change }, someSettings.limits)
    expect(from({ diskGb: 'lots' })).toEqual({
      errors: { diskGb: expect.stringContaining('Disk: a number of GB, like 20') },
    })
    expect(from({ diskGb: '0' })).toEqual({ errors: { diskGb: expect.stringContaining('a number of GB') } })
    expect(from({ memoryGb: '-4', threads: '2.5' })).toEqual({
      errors: {
        memoryGb: expect.stringContaining('Memory: a number of GB'),
        threads: expect.stringContaining('Threads: a whole number from 1 to 256'),
      },
    })
  })

  it('refuses a size limit under 1 GB, a slip under which nothing could be hosted, saying the floor', () => {
    const form = limitsToForm(someSettings.limits)
    const from = (change: Partial<typeof form>) => limitsFromForm({ ...form, ...change }, someSettings.limits)
    expect(from({ memoryGb: '0.0001' })).toEqual({
      errors: { memoryGb: expect.stringContaining('Memory: at least 1 GB') },
    })
    expect(from({ diskGb: '0.5' })).toEqual({ errors: { diskGb: expect.stringContaining('at least 1 GB') } })
    expect(from({ memoryGb: '1' })).toEqual({ changes: { memoryBytes: 1e9 } })
  })
})

describe('what a switch of tracker leaves behind', () => {
  const serving: HostingStatus = {
    phase: 'serving',
    modelId: 'stories260k',
    blocks: [1, 4],
    artifacts: [],
    serving: null,
    error: null,
  }
  const embedded = { ...someSettings, trackerUrl: null }

  it(
    'names the hosting a save would stop, so the user is asked, and nothing when the tracker stays or nothing is ' +
      'hosted',
    () => {
      expect(hostingLeftBySwitch(embedded, 'http://10.0.0.9:7070', serving)).toBe('stories260k, layers 2–4')
      expect(hostingLeftBySwitch(embedded, 'http://10.0.0.9:7070', { ...serving, phase: 'paused' })).toBe(
        'stories260k, layers 2–4 (paused)',
      )
      expect(hostingLeftBySwitch(embedded, '  ', serving)).toBeNull()
      expect(
        hostingLeftBySwitch({ ...someSettings, trackerUrl: 'http://10.0.0.9:7070' }, 'http://10.0.0.9:7070/', serving),
      ).toBeNull()
      expect(
        hostingLeftBySwitch(embedded, 'http://10.0.0.9:7070', {
          ...serving,
          phase: 'idle',
          modelId: null,
          blocks: null,
        }),
      ).toBeNull()
    },
  )
})
