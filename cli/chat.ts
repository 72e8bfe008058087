import { createInterface } from 'node:readline'
import { SwarmClient } from '../client/swarm-client'
import { defaultDataDir } from '../host/host'
import { NodeIdentity } from '../identity/keys'
import { type ChatMessage, MAX_DRAFT_TOKENS, NeuronError, type SamplingParams } from '../protocol'
import { renderChat } from '../text/chat-template'
import { intOption, parseCommandArgs, requireOption } from './args'
import type { Command } from './command'

export const chatCommand: Command = {
  name: 'chat',
  usage: `Usage: neuron chat --tracker URL --model ID "prompt" [--max-tokens 128] [--temperature 0] [--seed 0]
                  [--chat] [--f32] [--draft PATH [--draft-k 4]] [--hop-to-hop]
       neuron chat --tracker URL --model ID --interactive [--system TEXT] [--max-tokens 128] [--temperature 0]

Streams the completion to stdout; the route (hosts, blocks, per-hop ms) and tokens/s go to stderr.

  --interactive  a conversation: each line read from stdin is your next message (the prompt, if given, the first),
                 rendered with the model's chat template; each answer's session keeps its cache on its hosts, so a
                 turn sends only its new tokens (stderr says how many were cached). Ends at end of input.
  --system TEXT  with --interactive: the conversation's system message

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
      interactive: { type: 'boolean' },
      system: { type: 'string' },
    })
    const prompt = positionals.join(' ')
    if (prompt === '' && !values.interactive)
      throw new NeuronError('bad_option', 'give a prompt, or --interactive. See neuron chat --help.')
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
      if (values.interactive) {
        const sampling = { temperature, seed: intOption('seed', values.seed) ?? 0 }
        const maxTokens = intOption('max-tokens', values['max-tokens'], { min: 1 }) ?? 128
        await converse(client, { modelId, maxTokens, sampling, first: prompt, system: values.system })
        return 0
      }
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

/**
 * `--interactive`: a conversation over stdin's lines (client/generation/conversation.ts), each answer streamed to
 * stdout, and to stderr how many of its prompt tokens its session already held.
 */
async function converse(
  client: SwarmClient,
  o: { modelId: string; maxTokens: number; sampling: SamplingParams; first: string; system: string | undefined },
): Promise<void> {
  const tokenizer = await client.tokenizer(o.modelId)
  const messages: ChatMessage[] = o.system === undefined ? [] : [{ role: 'system', content: o.system }]
  const conversation = client.conversation()
  const lines = createInterface({ input: process.stdin, terminal: false })
  const said = async (line: string) => {
    messages.push({ role: 'user', content: line })
    const run = conversation.turn({
      modelId: o.modelId,
      prompt: renderChat(tokenizer, messages),
      maxTokens: o.maxTokens,
      sampling: o.sampling,
    })
    let answer = ''
    let next = await run.next()
    while (!next.done) {
      process.stdout.write(next.value.text)
      answer += next.value.text
      next = await run.next()
    }
    process.stdout.write('\n')
    messages.push({ role: 'assistant', content: answer })
    const s = next.value
    console.error(
      `  ${s.completionTokens} tokens (${s.finishReason}), ${s.decodeTokensPerSecond.toFixed(1)} tokens/s; ` +
        `${s.cachedTokens} of ${s.promptTokens} prompt tokens cached`,
    )
  }
  try {
    if (o.first !== '') await said(o.first)
    for await (const line of lines) if (line.trim() !== '') await said(line.trim())
  } finally {
    lines.close()
    await conversation.close()
  }
}
