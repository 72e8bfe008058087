import type { HostingStatus, TrackerLinkStatus } from '../../../protocol/app'
import type { ConnectionState } from '../../api/socketBridge'
import { layerRange } from '../../words'

export function connectionText(state: ConnectionState): string {
  if (state === 'open') return 'Connected'
  if (state === 'reconnecting') return 'Reconnecting…'
  return 'Connecting…'
}

export type StatusPartId = 'app' | 'tracker' | 'hosting'
/** ok: works; waiting: on its way (or not known yet); down: not working; off: not asked for. */
export type StatusPartState = 'ok' | 'waiting' | 'down' | 'off'
export interface StatusPart {
  id: StatusPartId
  state: StatusPartState
  text: string
  /** More, for a tooltip: the address, or why it is down. */
  detail: string | null
}

/** The three parts the sidebar's badge shows: the app's backend, its tracker, and this computer's hosting. */
export function statusParts(
  app: ConnectionState,
  tracker: TrackerLinkStatus | null,
  hosting: HostingStatus | null,
): StatusPart[] {
  return [appPart(app), trackerPart(app, tracker), hostingPart(app, tracker, hosting)]
}

function appPart(app: ConnectionState): StatusPart {
  if (app === 'open') return { id: 'app', state: 'ok', text: 'App connected', detail: null }
  if (app === 'reconnecting')
    return {
      id: 'app',
      state: 'down',
      text: 'App unreachable, reconnecting…',
      detail: 'the Neuron backend does not answer; is it running?',
    }
  return { id: 'app', state: 'waiting', text: 'App connecting…', detail: null }
}

function trackerPart(app: ConnectionState, tracker: TrackerLinkStatus | null): StatusPart {
  if (app !== 'open' || tracker === null)
    return { id: 'tracker', state: 'waiting', text: 'Tracker: unknown', detail: null }
  if (tracker.state === 'connected')
    return { id: 'tracker', state: 'ok', text: 'Tracker connected', detail: tracker.trackerUrl }
  return {
    id: 'tracker',
    state: 'down',
    text: 'Tracker unreachable',
    detail: `${tracker.trackerUrl}: ${tracker.problem ?? 'no answer'}`,
  }
}

function hostingPart(
  app: ConnectionState,
  tracker: TrackerLinkStatus | null,
  hosting: HostingStatus | null,
): StatusPart {
  const id = 'hosting'
  if (app !== 'open' || hosting === null) return { id, state: 'waiting', text: 'Hosting: unknown', detail: null }
  const range =
    hosting.modelId !== null && hosting.blocks !== null ? `${hosting.modelId}, ${layerRange(hosting.blocks)}` : null
  switch (hosting.phase) {
    case 'idle':
      return { id, state: 'off', text: 'Not hosting', detail: null }
    case 'serving':
      // Serving a range the tracker cannot route to helps nobody: say so.
      if (tracker?.state === 'unreachable')
        return { id, state: 'down', text: 'Hosting, but the tracker is unreachable', detail: range }
      return { id, state: 'ok', text: 'Hosting', detail: range }
    case 'paused':
      return { id, state: 'off', text: 'Hosting paused', detail: range }
    case 'failed':
      return { id, state: 'down', text: 'Hosting failed', detail: hosting.error?.message ?? null }
    default:
      return { id, state: 'waiting', text: `Hosting: ${hosting.phase}…`, detail: range }
  }
}
