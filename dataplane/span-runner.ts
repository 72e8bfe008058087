import { type Frame, jsonFrame, type OpenSession, Receipt, readTrailer } from '../protocol'
import { expectOk, forwardFrame, type HopInput, type StepSigning } from './hop-frames'
import type { HopLink } from './hop-link'

export interface SpanAnswer {
  readonly frame: Frame
  /** The host's signed receipt for the step, when it signs them. */
  readonly receipt: Receipt | undefined
  /** Round trip of the step, ms. */
  readonly ms: number
}

/**
 * Runs `chunks` through one hop in a session of their own, as a client's session looks to the host:
 * a ticketed open, one forward per chunk (steps 1, 2, …, positions one after another), a close.
 * Used for the tracker's known-answer probes and for re-running a step to audit another host.
 */
export async function runSpan(
  link: HopLink,
  session: string,
  open: OpenSession,
  chunks: readonly HopInput[],
  /** The key of the open's ticket: it signs each step, as any client's steps are signed. */
  client: StepSigning['identity'],
): Promise<SpanAnswer[]> {
  // a session without a ticket is refused at its open, before any step is signed
  const signing = { identity: client, hostId: open.ticket?.hostId ?? '', blocks: open.blocks }
  await expectOk(await link.request(jsonFrame('open', session, 0, open)))
  const answers: SpanAnswer[] = []
  try {
    let position = 0
    for (const [i, chunk] of chunks.entries()) {
      const started = performance.now()
      const frame = await link.request(forwardFrame(chunk, 0, session, i + 1, position, signing))
      answers.push({ frame, receipt: readTrailer(frame, Receipt), ms: performance.now() - started })
      position += chunk.tokens
    }
  } finally {
    await link.request(jsonFrame('close', session, 0xfffffffe, {})).catch(() => {})
  }
  return answers
}
