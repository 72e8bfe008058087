// Running a swarm client's generation to its end in tests: the tokens, the summary and the route it ended on.
import type { GenerateRequest, GenerationSummary } from '../client/generation/request'
import type { SwarmClient } from '../client/swarm-client'
import type { RouteHop } from '../protocol'

/**
 * Runs `request` on `client` to its end. `onToken` is called, and awaited, after each token with the count so far and
 * the route then (a test stops a host there); the request's own onRoute still hears every route.
 */
export async function generateAll(
  client: SwarmClient,
  request: GenerateRequest,
  onToken?: (n: number, route: readonly RouteHop[]) => void | Promise<void>,
): Promise<{ tokens: number[]; summary: GenerationSummary; route: readonly RouteHop[] }> {
  let route: readonly RouteHop[] = []
  const run = client.generate({
    ...request,
    onRoute: (hops) => {
      route = hops
      request.onRoute?.(hops)
    },
  })
  const tokens: number[] = []
  for (let next = await run.next(); ; next = await run.next()) {
    if (next.done) return { tokens, summary: next.value, route }
    tokens.push(next.value.token)
    await onToken?.(tokens.length, route)
  }
}

/** Every token of a run (a generation's, or a conversation's turn), and its summary. */
export async function drain(
  run: AsyncGenerator<{ token: number }, GenerationSummary>,
): Promise<{ tokens: number[]; summary: GenerationSummary }> {
  const tokens: number[] = []
  let next = await run.next()
  while (!next.done) {
    tokens.push(next.value.token)
    next = await run.next()
  }
  return { tokens, summary: next.value }
}
