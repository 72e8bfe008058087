import { SwarmClient } from '../client/swarm-client'
import { defaultDataDir } from '../host/host'
import { NodeIdentity } from '../identity/keys'
import { MAX_DRAFT_TOKENS, NeuronError } from '../protocol'
import { renderChat } from '../text/chat-template'
import { intOption, parseCommandArgs, requireOption } from './args'
import type { Command } from './command'

export const chatCommand: Command = {
  name: 'chat',
  usage: `Usage: neuron chat --tracker URL --model ID "prompt" [--max-tokens 128] [--temperature 0] [--seed 0]
                  [--chat] [--f32] [--draft PATH [--draft-k 4]] [--hop-to-hop]

Streams the completion to stdout; the route (hosts, blocks, per-hop ms) and tokens/s go to stderr.

  --chat   send the prompt as a user message, rendered with the model's own chat template
  --f32    hidden states travel as f32 between hops (default: the model's, f16 except for mixture-of-experts models)
  --draft PATH   speculative decoding (greedy only): a local GGUF with the model's tokenizer drafts tokens, one route
                 step checks --draft-k of them (default 4, at most 16)
  --hop-to-hop  each host sends its hidden states straight to the next where the two reach each other
                (default: through this client)

--tracker takes several instances of one swarm as URL,URL…: the chat moves to the next when one goes away.

Example: neuron chat --tracker http://127.0.0.1:7070 --model stories260k "Once upon a time"`,
  async run(args) {
    const { values, positionals } = parseCommandArgs(args, {
      tracker: { type: 'string' },
      model: { type: 'string' },
      'max-tokens': { type: 'string' },
      temperature: { type: 'string' },
      seed: { type: 'string' },
      'data-dir': { type: 'string' },
      f32: { type: 'boolean' },
      chat: { type: 'boolean' },
      draft: { type: 'string' },
      'draft-k': { type: 'string' },
      'hop-to-hop': { type: 'boolean' },
    })
    const prompt = positionals.join(' ')
    if (prompt === '') throw new NeuronError('bad_option', 'give a prompt. See neuron chat --help.')
    const temperature = values.temperature === undefined ? 0 : Number(values.temperature)
    if (!Number.isFinite(temperature) || temperature < 0)
      throw new NeuronError('bad_option', `--temperature must be a number ≥ 0, not "${values.temperature}".`)
    const client = await SwarmClient.connect(
      requireOption('tracker', values.tracker),
      await NodeIdentity.loadOrCreate(values['data-dir'] ?? defaultDataDir()),
      (l) => console.error(`[client] ${l}`),
    )
    try {
      const modelId = requireOption('model', values.model)
      const generation = client.generate({
        modelId,
        prompt: values.chat ? renderChat(await client.tokenizer(modelId), [{ role: 'user', content: prompt }]) : prompt,
        maxTokens: intOption('max-tokens', values['max-tokens'], { min: 1 }) ?? 128,
        sampling: { temperature, seed: intOption('seed', values.seed) ?? 0 },
        ...(values.f32 ? { hiddenDtype: 'f32' as const } : {}),
        ...(values.draft === undefined
          ? {}
          : {
              draft: {
                path: values.draft,
                k: intOption('draft-k', values['draft-k'], { min: 1, max: MAX_DRAFT_TOKENS }) ?? 4,
              },
            }),
        ...(values['hop-to-hop'] ? { forwarding: 'hop-to-hop' as const } : {}),
      })
      let next = await generation.next()
      while (!next.done) {
        process.stdout.write(next.value.text)
        next = await generation.next()
      }
      process.stdout.write('\n')
      const s = next.value
      for (const hop of s.route)
        console.error(
          `  hop ${hop.hostId} blocks [${hop.blocks[0]}, ${hop.blocks[1]}) ${hop.medianMs.toFixed(2)} ms/step`,
        )
      for (const f of s.failovers)
        console.error(
          `  failover: ${f.hostId} [${f.blocks[0]}, ${f.blocks[1]}) replaced in ${f.recoveryMs.toFixed(0)} ms`,
        )
      console.error(
        `  ${s.completionTokens} tokens (${s.finishReason}), ${s.decodeTokensPerSecond.toFixed(1)} tokens/s`,
      )
      const d = s.speculation
      if (d !== undefined)
        console.error(`  draft: ${d.accepted} of ${d.drafted} drafted tokens accepted in ${d.verifySteps} verify steps`)
    } finally {
      await client.close()
    }
    return 0
  },
}
