import { describe, expect, it } from 'vitest'
import { judgeNavigation } from './navigation'

const appUrl = 'file:///opt/Neuron/resources/app.asar/dist/renderer/index.html'

describe('navigation from the window', () => {
  it('keeps the app page, whatever its hash or query', () => {
    expect(judgeNavigation(appUrl, appUrl)).toBe('app')
    expect(judgeNavigation(`${appUrl}#/host`, appUrl)).toBe('app')
    expect(judgeNavigation(`${appUrl}?screen=chat`, appUrl)).toBe('app')
  })

  it('sends web and mail links to the OS', () => {
    expect(judgeNavigation('https://huggingface.co/models', appUrl)).toBe('external')
    expect(judgeNavigation('http://127.0.0.1:7070/', appUrl)).toBe('external')
    expect(judgeNavigation('mailto:someone@example.com', appUrl)).toBe('external')
  })

  it('denies other files, other schemes and garbage', () => {
    expect(judgeNavigation('file:///etc/passwd', appUrl)).toBe('deny')
    expect(judgeNavigation('file:///opt/Neuron/resources/app.asar/dist/renderer/other.html', appUrl)).toBe('deny')
    expect(judgeNavigation('javascript:alert(1)', appUrl)).toBe('deny')
    expect(judgeNavigation('smb://host/share', appUrl)).toBe('deny')
    expect(judgeNavigation('not a url', appUrl)).toBe('deny')
  })
})
