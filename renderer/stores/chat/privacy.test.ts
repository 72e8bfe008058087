import { describe, expect, it } from 'vitest'
import { NeuronError } from '../../../protocol/errors'
import { fakeBridge } from '../../../test/renderer/fake-bridge'
import { someSettings } from '../../../test/renderer/settings-fixtures'
import { createSettingsStore } from '../settings/store'
import { privacyNotice } from './privacy'

const remote = {
  ...someSettings,
  trackerUrl: 'https://swarm.example.org',
  connectedTrackerUrl: 'https://swarm.example.org',
}

describe('the privacy of a chat', () => {
  it('says the embedded swarm keeps everything on this computer, and asks nothing', () => {
    expect(privacyNotice(someSettings)).toMatchObject({
      level: 'private',
      label: 'Private: all on this computer',
      needsConsent: false,
    })
    expect(privacyNotice(someSettings).detail).toMatch(/never leave it/)
  })

  it('says who sees what on a public tracker, and asks once until the user agrees', () => {
    const asked = privacyNotice({ ...remote, privacy: { level: 'public', consented: false } })
    expect(asked).toMatchObject({ level: 'public', label: 'Public swarm: hosts see your chats', needsConsent: true })
    expect(asked.detail).toMatch(
      /^Other people's computers on the swarm at https:\/\/swarm\.example\.org compute your answers\./,
    )
    expect(asked.detail).toMatch(
      new RegExp(
        "first host on a route sees your prompt's tokens, the last host sees the answer's, " +
          'and every host on the route sees the hidden states',
      ),
    )
    expect(privacyNotice({ ...remote, privacy: { level: 'public', consented: true } }).needsConsent).toBe(false)
  })
})

describe('agreeing to chat on a public swarm', () => {
  it('names the tracker in force, and the chat stops asking', async () => {
    const asked = { ...remote, privacy: { level: 'public' as const, consented: false } }
    const bridge = fakeBridge({
      'settings.get': () => asked,
      'settings.consent': ({ trackerUrl }) => ({ ...asked, trackerUrl, privacy: { level: 'public', consented: true } }),
    })
    const store = createSettingsStore(bridge, () => 7)
    await store.getState().load()
    await store.getState().consent()
    expect(bridge.calls.at(-1)).toEqual({
      method: 'settings.consent',
      input: { trackerUrl: 'https://swarm.example.org' },
    })
    const settings = store.getState().settings
    expect(settings !== null && privacyNotice(settings).needsConsent).toBe(false)
  })

  it('keeps asking, saying why, when the backend refuses', async () => {
    const asked = { ...remote, privacy: { level: 'public' as const, consented: false } }
    const bridge = fakeBridge({
      'settings.get': () => asked,
      'settings.consent': () => {
        throw new NeuronError('bad_request', 'consent is asked for the tracker in force (https://other.example.org)')
      },
    })
    const store = createSettingsStore(bridge)
    await store.getState().load()
    await store.getState().consent()
    expect(store.getState().consentError?.message).toMatch(/tracker in force/)
    const settings = store.getState().settings
    expect(settings !== null && privacyNotice(settings).needsConsent).toBe(true)
  })
})
