import { NeuronError } from '../protocol'

/** How long a chat waits for a free session by default when every host that could serve it is full. */
export const WAIT_FOR_SESSION_MS = 30_000

/**
 * Refusals that pass once a session ends: a host at its sessions
 * or KV budget (the tracker's view of it lags by a heartbeat).
 */
const HOST_FULL = new Set(['busy', 'kv_budget_full', 'too_many_sessions'])
/** The reasons route.plan gives for hosts that serve the blocks but cannot take one more session now. */
const ONLY_FULL = new Set(['no free session', 'too little free KV'])

/** Whether `error` says only that the swarm is full for now: no host is missing, none failed. */
export function swarmIsFull(error: unknown): boolean {
  if (!(error instanceof NeuronError)) return false
  if (HOST_FULL.has(error.code)) return true
  if (error.code !== 'no_route') return false
  const unavailable = error.details.unavailable
  if (typeof unavailable !== 'object' || unavailable === null) return false
  const reasons = Object.keys(unavailable)
  return reasons.length > 0 && reasons.every((why) => ONLY_FULL.has(why))
}

/**
 * Runs `attempt` (plan a route and open it) again while the swarm is full, with growing pauses, for at most `waitMs`;
 * then, or on any other error, throws what the last attempt threw. A burst of chats thus queues for sessions instead
 * of failing.
 */
export async function whenSessionFree<T>(
  attempt: () => Promise<T>,
  waitMs: number,
  signal?: AbortSignal,
  log: (line: string) => void = () => {},
): Promise<T> {
  const deadline = performance.now() + waitMs
  let pauseMs = 100
  for (let tries = 1; ; tries++) {
    // A caller that hung up while this waited opens nothing more.
    if (tries > 1 && signal?.aborted)
      throw new NeuronError('aborted', 'the chat was stopped while it waited for a free session.')
    try {
      return await attempt()
    } catch (error) {
      const left = deadline - performance.now()
      if (!swarmIsFull(error) || left <= 0 || signal?.aborted) throw error
      if (tries === 1)
        log(
          `every host that could serve this chat is full; waiting up to ${Math.round(waitMs / 1000)} s for a free ` +
            `session`,
        )
      // jittered, so a burst of waiting chats does not come back at the same moment
      await new Promise<void>((resolve) => {
        const done = () => {
          clearTimeout(timer)
          signal?.removeEventListener('abort', done)
          resolve()
        }
        const timer = setTimeout(done, Math.min(left, pauseMs * (0.5 + Math.random())))
        signal?.addEventListener('abort', done, { once: true })
      })
      pauseMs = Math.min(2000, pauseMs * 1.5)
    }
  }
}
