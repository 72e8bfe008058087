import type { TrackerChannel } from '../../client/tracker-link'
import { ClientToTracker, callRpc, NeuronError } from '../../protocol'

/** A ping each second, each given 3 s: a dead tracker is told within 4 s (the sidebar promises 5). */
export const HEARTBEAT_INTERVAL_MS = 1000
export const HEARTBEAT_TIMEOUT_MS = 3000

/**
 * Tells `lost` (once, with the reason in words) when the tracker behind `socket` is gone: the socket
 * dropped, or a ping went unanswered (a tracker that was stopped, or a network that drops packets,
 * closes nothing: Socket.IO's own heartbeat would say so after 45 s). Returns the stop.
 */
export function watchHeartbeat(socket: TrackerChannel, lost: (reason: string) => void): () => void {
  let done = false
  let inFlight = false
  const end = (reason: string) => {
    if (done) return
    stop()
    lost(reason)
  }
  const timer = setInterval(() => {
    if (inFlight || done) return
    inFlight = true
    callRpc(socket, ClientToTracker, 'ping', {}, HEARTBEAT_TIMEOUT_MS)
      .catch((e: unknown) => {
        // A tracker from before the ping answers unknown events with an error, which is an answer too.
        if ((e instanceof NeuronError && e.code === 'timeout') || !socket.connected) end(`no answer to a ping within ${HEARTBEAT_TIMEOUT_MS / 1000} s`)
      })
      .finally(() => {
        inFlight = false
      })
  }, HEARTBEAT_INTERVAL_MS)
  timer.unref()
  socket.once('disconnect', (reason) => end(`the connection dropped (${reason})`))
  const stop = () => {
    done = true
    clearInterval(timer)
  }
  return stop
}
