// A greedy chat, with or without a draft, run inside a namespace of the test network (bench/wan-speculative.ts):
// prints one JSON line when done.
// Usage: node --import tsx test/network/speculative-child.ts TRACKER MODEL MAX_TOKENS TOKEN,TOKEN,… FORWARDING
// [DRAFT_PATH K] (FORWARDING: client-relayed or hop-to-hop)
import { SwarmClient } from '../../client/swarm-client'
import { NodeIdentity } from '../../identity/keys'

const [trackerUrl = '', modelId = '', maxTokens = '16', prompt = '', forwarding = 'client-relayed', draft, k = '4'] =
  process.argv.slice(2)
if (forwarding !== 'client-relayed' && forwarding !== 'hop-to-hop')
  throw new Error(`FORWARDING is client-relayed or hop-to-hop, not ${forwarding}`)
const client = await SwarmClient.connect(trackerUrl, NodeIdentity.generate(), (l) =>
  process.stderr.write(`[client] ${l}\n`),
)
try {
  const run = client.generate({
    modelId,
    prompt: prompt.split(',').map(Number),
    maxTokens: Number(maxTokens),
    stopAtEog: false,
    forwarding,
    ...(draft === undefined ? {} : { draft: { path: draft, k: Number(k) } }),
  })
  const tokens: number[] = []
  let next = await run.next()
  while (!next.done) {
    tokens.push(next.value.token)
    next = await run.next()
  }
  const { decodeTokensPerSecond, speculation, receipts } = next.value
  const steps = new Set(receipts.map((r) => r.step)).size
  process.stdout.write(`${JSON.stringify({ done: { tokens, decodeTokensPerSecond, speculation, steps } })}\n`)
} finally {
  await client.close()
}
