// The gateway's requests share their prefixes' prefill (issue 35): requests whose chats begin with the same system
// prompt start from the cache the first one left on its hosts, so the hosts run only what follows it, and every
// answer is the one a fresh session gives. Across accounts only where the operator shares prefixes
// (GatewayOptions.sharedPrefixes); by default each account starts only from its own. A real tracker and two hosts of
// stories260K on loopback, driven by the official `openai` client.
import OpenAI from 'openai'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../../client/swarm-client'
import { NodeIdentity } from '../../identity/keys'
import { GATEWAY_ADMIN } from '../../test/gateway-suite'
import { STORIES_260K, scratchDir } from '../../test/models'
import { createAccount, type InProcessSwarm, startSwarm } from '../../test/programs'
import { renderChat } from '../../text/chat-template'

const SYSTEM =
  'You are a kind storyteller. You tell short stories about a little girl named Lily and her dog, who live in a ' +
  'small house near the park. Every story ends happily, and every story is about a day out.'
const QUESTIONS = ['Tell me about the park.', 'What did the dog find?', 'Where did Lily go?'] as const

for (const shared of [true, false])
  describe(`the gateway's requests with a shared system prompt (prefixes ${shared ? 'shared' : 'per account'})`, () => {
    let scratch: { dir: string; cleanup: () => Promise<void> }
    let swarm: InProcessSwarm
    let direct: SwarmClient
    const keys: OpenAI[] = []

    beforeAll(async () => {
      scratch = await scratchDir('neuron-gateway-prefixes-')
      // no audits or probes after the first: the hosts' counts are the requests' own work
      swarm = await startSwarm(
        scratch.dir,
        STORIES_260K,
        [
          [0, 3],
          [3, 5],
        ],
        {
          gateway: { adminToken: GATEWAY_ADMIN, sharedPrefixes: shared },
          checks: { probationProbes: 1, probeEveryMs: 3_600_000, auditRate: 0, probationAuditRate: 0 },
        },
      )
      const accounts = [
        await createAccount(swarm.tracker.url, GATEWAY_ADMIN, { name: 'first' }),
        await createAccount(swarm.tracker.url, GATEWAY_ADMIN, { name: 'second' }),
      ]
      for (const { apiKey: key } of accounts)
        keys.push(new OpenAI({ apiKey: key, baseURL: `${swarm.tracker.url}/v1`, maxRetries: 0 }))
      direct = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
    }, 180_000)
    afterAll(async () => {
      await direct?.close()
      await swarm?.close()
      await scratch?.cleanup()
    })

    it('runs only what follows the prefix on the hosts, and answers as a fresh session', async () => {
      const modelId = swarm.manifest.modelId
      const tokenizer = await direct.tokenizer(modelId)
      const positions = () => swarm.hosts.reduce((n, h) => n + h.computedPositions.all, 0)
      const reused: boolean[] = []
      // key 1 asks first (its prefix is prefilled once), then key 2, then key 1 again
      for (const [k, question] of [
        [0, QUESTIONS[0]],
        [1, QUESTIONS[1]],
        [0, QUESTIONS[2]],
      ] as const) {
        const messages = [
          { role: 'system' as const, content: SYSTEM },
          { role: 'user' as const, content: question },
        ]
        const before = positions()
        const answer = await keys[k]?.chat.completions.create({
          model: modelId,
          messages,
          max_tokens: 6,
          temperature: 0,
        })
        const used = positions() - before
        const prompt = renderChat(tokenizer, messages)
        expect(answer?.usage?.prompt_tokens).toBe(prompt.length)
        // each of the two hosts runs the prompt and the tokens fed back, unless it started from a cache
        reused.push(used < prompt.length)
        // the usage says which prompt tokens came from the cache (OpenAI's prompt_tokens_details)
        const cached = answer?.usage?.prompt_tokens_details?.cached_tokens ?? 0
        expect(cached > 0).toBe(used < prompt.length)
        // greedy: the answer a client that reuses nothing gets for the whole prompt
        let expected = ''
        const run = direct.generate({ modelId, prompt, maxTokens: 6, sampling: { temperature: 0 } })
        for (let next = await run.next(); !next.done; next = await run.next()) expected += next.value.text
        expect(answer?.choices[0]?.message.content).toBe(expected)
      }
      // the first prefilled everything; key 2 started from key 1's cache only where prefixes are shared; key 1's second
      // request always from its own
      expect(reused).toEqual([false, shared, true])
    }, 180_000)
  })
