import { swarmIsFull } from '../../client/free-session'
import { NeuronError, type WireError } from '../../protocol'

/**
 * A routing refusal (no_route, a host at its sessions or memory) in words a chat user can act on, by its code and
 * details: "no ready host with a free session and 191 free KV tokens" means nothing to them. The numbers stay in
 * `details` for programs; null for any other error, and for a refusal over the manifest's cuts (a publishing fault,
 * left in the tracker's words).
 */
export function routingRefusal(error: unknown, modelId: string): WireError | null {
  if (!(error instanceof NeuronError)) return null
  const details = { ...error.details }
  if (swarmIsFull(error)) {
    return {
      code: 'swarm_busy',
      message:
        `No computer in the swarm can take this chat right now: every one serving ${modelId} is busy or its ` +
        `memory is full. Try again in a minute, or host part of the model yourself.`,
      details,
    }
  }
  if (error.code !== 'no_route' || !Array.isArray(details.uncovered) || details.uncovered.length === 0) return null
  const unavailable = details.unavailable
  const servedAtAll = typeof unavailable === 'object' && unavailable !== null && Object.keys(unavailable).length > 0
  return {
    code: 'model_not_served',
    message: servedAtAll
      ? `No computer in the swarm can answer with ${modelId} right now: those serving part of it are starting, ` +
        `busy or unreachable. Try again in a minute, or host the missing part of the model yourself.`
      : `No computer in the swarm serves part of ${modelId} right now, so it cannot answer. Host the missing part ` +
        `of the model yourself, or try again when more computers are online.`,
    details,
  }
}
