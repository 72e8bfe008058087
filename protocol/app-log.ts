import { z } from 'zod'
import { Count } from './manifest'
import { rpc } from './rpc'

// The app's own log (what the backend prints: hosting, the swarm, pairing, downloads), for the Log screen.

/** The most lines one answer carries; the backend keeps the last LOG_LINES_KEPT. */
export const LOG_LINES_PER_ANSWER = 500
export const LOG_LINES_KEPT = 2000
/** A line longer than this is cut (a stack or a peer's message quoted whole). */
export const LOG_LINE_CHARS = 4000

export const LogLine = z.object({
  /** Counts up from 1 at the app's start: ask for the lines after the last one seen. */
  seq: Count,
  at: z.number(),
  text: z.string().max(LOG_LINE_CHARS + 1),
})
export type LogLine = z.infer<typeof LogLine>

export const LogView = z.object({
  lines: z.array(LogLine).max(LOG_LINES_PER_ANSWER),
  /** Lines dropped before the first one sent: older than the backend keeps, or more than one answer carries. */
  skipped: Count,
})
export type LogView = z.infer<typeof LogView>

export const LogMethods = {
  /** The lines after `after` (0: from the oldest kept), at most LOG_LINES_PER_ANSWER, the newest ones. */
  'log.get': rpc(z.object({ after: Count.default(0) }).strict(), LogView),
} as const
