import { describe, expect, it } from 'vitest'
import { someSettings } from './fixtures'
import { limitsFromForm, limitsToForm } from './limitsForm'
import { EMBEDDED_SWARM, identityFileName, showsSaved, trackerLabel, trackerShort, trackerUrlProblem } from './selectors'

describe('settings selectors', () => {
  it('calls an empty tracker URL the embedded private swarm', () => {
    expect(trackerLabel(someSettings)).toBe(EMBEDDED_SWARM)
    expect(trackerLabel({ ...someSettings, trackerUrl: 'https://tracker.example.org' })).toBe('https://tracker.example.org')
    expect(trackerShort(someSettings)).toBe('Embedded swarm · 127.0.0.1:43111')
    expect(trackerShort({ ...someSettings, trackerUrl: 'https://tracker.example.org', connectedTrackerUrl: 'https://tracker.example.org' })).toBe(
      'Tracker · tracker.example.org',
    )
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
  })
})

describe('limits form', () => {
  it('round-trips the limits through the form in GB, empty meaning no limit', () => {
    const form = limitsToForm(someSettings.limits)
    expect(form).toEqual({ diskGb: '20', memoryGb: '', threads: '8', useGpu: true })
    expect(limitsFromForm(form)).toEqual({ limits: someSettings.limits })
  })

  it('explains each bad value', () => {
    const form = limitsToForm(someSettings.limits)
    expect(limitsFromForm({ ...form, diskGb: 'lots' })).toEqual({ error: expect.stringContaining('Disk limit must be a number of GB greater than 0, like 20') })
    expect(limitsFromForm({ ...form, diskGb: '0' })).toEqual({ error: expect.stringContaining('Disk limit must be a number of GB greater than 0') })
    expect(limitsFromForm({ ...form, memoryGb: '-4' })).toEqual({ error: expect.stringContaining('Memory limit must be a number of GB greater than 0') })
    expect(limitsFromForm({ ...form, threads: '2.5' })).toEqual({ error: expect.stringContaining('Threads must be a whole number from 1 to 256') })
  })
})
