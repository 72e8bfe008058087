import type { Settings } from '../../../protocol/app'

/** Who sees a chat on the swarm in force, as the chat screen says it. */
export interface PrivacyNotice {
  level: 'private' | 'public'
  /** A few words beside the lock or the globe. */
  label: string
  /** Who sees what. */
  detail: string
  /** A public swarm asks once, per tracker, before the first chat. */
  needsConsent: boolean
}

export function privacyNotice(settings: Settings): PrivacyNotice {
  if (settings.privacy.level === 'private') {
    return {
      level: 'private',
      label: 'Private: all on this computer',
      detail:
        'The embedded tracker listens only on this computer, so every host that computes an answer runs here: your ' +
        'prompts, the answers and the hidden states between blocks never leave it.',
      needsConsent: false,
    }
  }
  const tracker = settings.trackerUrl ?? settings.connectedTrackerUrl
  return {
    level: 'public',
    label: 'Public swarm: hosts see your chats',
    detail:
      `Other people's computers on the swarm at ${tracker} compute your answers. The first host on a route ` +
      `sees your prompt's tokens, the last host sees the answer's, and every host on the route sees the hidden ` +
      `states between blocks, from which text can be recovered. The tracker sees which model you use and how many ` +
      `tokens. Send nothing you would not show a stranger.`,
    needsConsent: !settings.privacy.consented,
  }
}
