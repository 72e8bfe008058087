import type { ServerResponse } from 'node:http'
import type { Chunk } from './generation'

/** The endpoint's shape of each streamed chunk; `usage` is absent unless the caller asked for it. */
export interface SseChunks {
  readonly text: (text: string) => unknown
  readonly finish: (reason: 'stop' | 'length') => unknown
  readonly usage: ((completionTokens: number) => unknown) | undefined
}

export function startSse(res: ServerResponse): void {
  res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' })
}

export function sse(res: ServerResponse, body: unknown): void {
  res.write(`data: ${JSON.stringify(body)}\n\n`)
}

/** Streams a generation as SSE chunks in OpenAI's order: text deltas, the finish chunk, usage, [DONE]. */
export async function streamSse(res: ServerResponse, first: IteratorResult<Chunk, void>, stream: AsyncGenerator<Chunk, void>, chunk: SseChunks): Promise<void> {
  for (let next = first; !next.done; next = await stream.next()) {
    const c = next.value
    if ('done' in c) {
      sse(res, chunk.finish(c.finishReason))
      if (chunk.usage !== undefined) sse(res, chunk.usage(c.completionTokens))
    } else if (c.text !== '') sse(res, chunk.text(c.text))
  }
  res.end('data: [DONE]\n\n')
}
