import type { TrackerChannel } from '../../dataplane/tracker-link'
import { ClientToTracker, callRpc } from '../../protocol'

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
    let answered = false
    // Any answer counts, an error too (a tracker from before the ping
    // refuses the event); a dropped socket is told by disconnect.
    callRpc(socket, ClientToTracker, 'ping', {}, 10_000)
      .catch(() => {})
      .finally(() => {
        answered = true
        inFlight = false
      })
    const late = setTimeout(() => {
      // Read what arrived first: after this process was busy for
      // a while, its own timer fires before the answer is read.
      setImmediate(() => {
        if (!answered) end(`no answer to a ping within ${HEARTBEAT_TIMEOUT_MS / 1000} s`)
      })
    }, HEARTBEAT_TIMEOUT_MS)
    late.unref()
  }, HEARTBEAT_INTERVAL_MS)
  timer.unref()
  socket.once('disconnect', (reason) => end(`the connection dropped (${reason})`))
  const stop = () => {
    done = true
    clearInterval(timer)
  }
  return stop
}
