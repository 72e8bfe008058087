import { NeuronError } from '../../protocol/errors'

/** An error as the screens keep it: the backend's code plus a sentence for the user. */
export interface ShownError {
  code: string
  message: string
  /** The backend's own words when `message` is a tailored sentence. */
  detail?: string
}

const TAILORED: Record<string, string> = {
  no_route:
    'No hosts serve every block of this model right now. Host the missing blocks yourself, or try again when more ' +
    'hosts are online.',
  insufficient_credits:
    'Out of credits: this account cannot pay for the answer. Host a model for a while to earn credits, then try again.',
  tracker_unreachable:
    'The tracker does not answer. Check the tracker URL (Settings) and your network, then try again.',
  host_unreachable: 'Lost the connection to the Neuron host. It is reconnecting; try again in a moment.',
}

/**
 * What went wrong, in words: a tailored sentence for the codes a user can act on, otherwise the backend's own message.
 */
export function shownError(error: unknown): ShownError {
  if (
    error instanceof NeuronError ||
    (typeof error === 'object' && error !== null && 'code' in error && 'message' in error)
  ) {
    const code = String(error.code)
    const own = String(error.message)
    const tailored = TAILORED[code]
    return tailored === undefined ? { code, message: own } : { code, message: tailored, detail: own }
  }
  return { code: 'internal', message: error instanceof Error ? error.message : String(error) }
}
