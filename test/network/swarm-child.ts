// A swarm client run inside a namespace of the test network (the test runner itself is on no namespace's
// network): prints one JSON line per event, for the test to read as they come.
// Usage: node --import tsx test/network/swarm-child.ts hosts TRACKER
//        node --import tsx test/network/swarm-child.ts chat TRACKER MODEL MAX_TOKENS TOKEN,TOKEN,…
// [client-relayed|hop-to-hop|default] (default: no forwarding asked, as an app or the API chats: 'auto')
import { SwarmClient } from '../../client/swarm-client'
import { NodeIdentity } from '../../identity/keys'
import { ClientToTracker, callRpc } from '../../protocol'

const [command, trackerUrl = '', modelId = '', maxTokens = '16', prompt = '', forwarding = 'client-relayed'] =
  process.argv.slice(2)
if (forwarding !== 'client-relayed' && forwarding !== 'hop-to-hop' && forwarding !== 'default')
  throw new Error(`forwarding is client-relayed, hop-to-hop or default, not ${forwarding}`)
const say = (line: unknown) => process.stdout.write(`${JSON.stringify(line)}\n`)
const client = await SwarmClient.connect(trackerUrl, NodeIdentity.generate(), (l) =>
  process.stderr.write(`[client] ${l}\n`),
)
try {
  if (command === 'hosts') {
    const { hosts } = await callRpc(client.tracker, ClientToTracker, 'hosts.list', {})
    say({
      hosts: hosts.map((h) => ({
        hostId: h.hostId,
        online: h.online,
        blocks: h.state.blocks,
        endpoint: h.state.endpoint,
        relayedBytes: h.relayedBytes,
        relayOffer: h.state.relayOffer,
        // what routing weighs, for a failing test to print
        speed: {
          msPerBlock: h.state.msPerBlock,
          activeSessions: h.state.activeSessions,
          maxSessions: h.state.maxSessions,
          status: h.state.status,
        },
      })),
    })
  } else if (command === 'chat') {
    const started = performance.now()
    const run = client.generate({
      modelId,
      prompt: prompt.split(',').map(Number),
      maxTokens: Number(maxTokens),
      stopAtEog: false,
      ...(forwarding === 'default' ? {} : { forwarding }),
      // the route as it opens and after each failover: a test may act on the hosts it names
      onRoute: (hops) => say({ route: hops.map((h) => h.hostId), atMs: Math.round(performance.now() - started) }),
    })
    const tokens: number[] = []
    let next = await run.next()
    while (!next.done) {
      tokens.push(next.value.token)
      say({ token: next.value.token, index: tokens.length, atMs: Math.round(performance.now() - started) })
      next = await run.next()
    }
    const { route, failovers, decodeTokensPerSecond } = next.value
    say({
      done: {
        tokens,
        route: route.map((h) => ({
          hostId: h.hostId,
          blocks: h.blocks,
          medianMs: h.medianMs,
          relayHostId: h.relayHostId,
          reached: h.reached,
          hiddenBytesIn: h.hiddenBytesIn,
        })),
        failovers,
        decodeTokensPerSecond,
      },
    })
  } else throw new Error(`unknown command ${command}: hosts or chat`)
} finally {
  await client.close()
}
