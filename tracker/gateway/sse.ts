import type { ServerResponse } from 'node:http'
import type { Chunk } from './chunks'
import type { GatewayError } from './errors'

/** The endpoint's shape of each streamed chunk; `usage` is absent unless the caller asked for it. */
export interface SseChunks {
  readonly text: (text: string) => unknown
  readonly finish: (reason: 'stop' | 'length') => unknown
  readonly usage: ((completionTokens: number) => unknown) | undefined
}

export function startSse(res: ServerResponse): void {
  // set, not passed to writeHead, so that an error after the start can see it is a stream (getHeader)
  res.setHeader('content-type', 'text/event-stream')
  res.setHeader('cache-control', 'no-cache')
  res.setHeader('connection', 'keep-alive')
  res.writeHead(200)
}

export function sse(res: ServerResponse, body: unknown): void {
  res.write(`data: ${JSON.stringify(body)}\n\n`)
}

/** Streams a generation as SSE chunks in OpenAI's order: text deltas, the finish chunk, usage, [DONE]. */
export async function streamSse(
  res: ServerResponse,
  first: IteratorResult<Chunk, void>,
  stream: AsyncGenerator<Chunk, void>,
  chunk: SseChunks,
): Promise<void> {
  for (let next = first; !next.done; next = await stream.next()) {
    const c = next.value
    if ('done' in c) {
      sse(res, chunk.finish(c.finishReason))
      if (chunk.usage !== undefined) sse(res, chunk.usage(c.completionTokens))
    } else if (c.text !== '') sse(res, chunk.text(c.text))
  }
  res.end('data: [DONE]\n\n')
}

/** Ends a stream that failed after it began with the error in OpenAI's shape, which the official clients throw. */
export function endSseWithError(res: ServerResponse, error: GatewayError): void {
  sse(res, error.body())
  res.end()
}

/**
 * A choice's stream: its first chunk (awaited before the response began, so a refusal is an HTTP error) and the rest.
 */
export interface ChoiceStream {
  readonly first: IteratorResult<Chunk, void>
  readonly stream: AsyncGenerator<Chunk, void>
}

/**
 * The endpoint's shape of each choice's chunks; `delta` undefined holds the choice's text until `finish` (tool calls).
 */
export interface ChoiceChunks {
  readonly delta: ((index: number, c: Extract<Chunk, { text: string }>) => unknown) | undefined
  /** The chunks that end choice `index`, given its whole text and its log-probabilities. */
  readonly finish: (
    index: number,
    done: Extract<Chunk, { done: true }>,
    text: string,
    logprobs: NonNullable<Extract<Chunk, { text: string }>['logprobs']>,
  ) => unknown[]
  readonly usage: ((completionTokens: number) => unknown) | undefined
}

/** Streams several choices as SSE, interleaved as they come: deltas, each choice's finish, then usage and [DONE]. */
export async function streamChoices(
  res: ServerResponse,
  choices: readonly ChoiceStream[],
  chunk: ChoiceChunks,
): Promise<void> {
  let completionTokens = 0
  await Promise.all(
    choices.map(async ({ first, stream }, index) => {
      let text = ''
      const logprobs: NonNullable<Extract<Chunk, { text: string }>['logprobs']>[number][] = []
      for (let next = first; !next.done; next = await stream.next()) {
        const c = next.value
        if ('done' in c) {
          completionTokens += c.completionTokens
          for (const body of chunk.finish(index, c, text, logprobs)) sse(res, body)
        } else {
          text += c.text
          if (chunk.delta === undefined) logprobs.push(...(c.logprobs ?? []))
          else if (c.text !== '' || (c.logprobs?.length ?? 0) > 0) sse(res, chunk.delta(index, c))
        }
      }
    }),
  )
  if (chunk.usage !== undefined) sse(res, chunk.usage(completionTokens))
  res.end('data: [DONE]\n\n')
}
