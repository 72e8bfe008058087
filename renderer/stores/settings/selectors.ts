import type { HostingStatus, Settings } from '../../../protocol/app'
import { layerRange } from '../../words'
import type { SettingsSection } from './initialState'

export const EMBEDDED_SWARM = 'Embedded private swarm on this computer'

/** What the tracker field means: the configured URL or the embedded swarm. */
export function trackerLabel(settings: Settings): string {
  return settings.trackerUrl ?? EMBEDDED_SWARM
}

/** The status line's short form: where the backend is connected, and whether that is the embedded tracker. */
export function trackerShort(settings: Settings): string {
  let host = settings.connectedTrackerUrl
  try {
    host = new URL(settings.connectedTrackerUrl).host
  } catch {}
  return settings.trackerUrl === null ? `Embedded swarm · ${host}` : `Tracker · ${host}`
}

/** Why a typed tracker URL cannot be right, before asking the backend; null when it may be. */
export function trackerUrlProblem(text: string): string | null {
  if (text === '') return null
  try {
    const url = new URL(text)
    if (url.protocol === 'http:' || url.protocol === 'https:') return null
  } catch {}
  return (
    'The tracker URL must be a full http(s) URL such as http://127.0.0.1:7070 (leave it empty for the ' +
    'embedded private swarm).'
  )
}

/**
 * The hosting a save of the tracker field would leave behind, in words (e.g. "stories260k, layers 2–4"),
 * so the user is asked what to do with it; null when the field names the tracker in force or nothing is hosted.
 */
export function hostingLeftBySwitch(settings: Settings, text: string, hosting: HostingStatus | null): string | null {
  const next = text.trim() === '' ? null : text.trim().replace(/\/+$/, '')
  if (next === settings.trackerUrl || hosting === null || hosting.modelId === null || hosting.blocks === null)
    return null
  if (hosting.phase === 'idle' || hosting.phase === 'stopping') return null
  return `${hosting.modelId}, ${layerRange(hosting.blocks)}${hosting.phase === 'paused' ? ' (paused)' : ''}`
}

/** The PEM backup's file name: the host id tells backups of several computers apart. */
export function identityFileName(settings: Settings): string {
  return `neuron-identity-${settings.hostId}.pem`
}

/** The "Saved" note shows for a moment after a successful save. */
export function showsSaved(savedAt: number | null, now: number, forMs = 2_500): boolean {
  return savedAt !== null && now - savedAt < forMs
}

const SECTION_NAMES: Record<SettingsSection, string> = {
  tracker: 'Tracker',
  identity: 'Identity',
  limits: 'Limits',
  access: 'Access list',
  consent: 'Privacy choice',
  lan: 'Home network setting',
}

/** The "Saved" note, naming what was saved, since the section saved may be far down the screen from it. */
export function savedMessage(section: SettingsSection | null): string {
  return section === null ? 'Saved' : `${SECTION_NAMES[section]} saved`
}
