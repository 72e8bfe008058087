// The streamed text of a generation against llama.cpp's (node-llama-cpp) detokenize of the whole sequence, to the
// last byte, on stories260K's byte-fallback tokens: a generation may end inside a multi-byte character.
import { readFile } from 'node:fs/promises'
import type { LlamaModel, Token } from 'node-llama-cpp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { NodeIdentity } from '../identity/keys'
import { oracleModel } from '../native/oracle'
import { STORIES_260K, scratchDir } from '../test/models'
import { type InProcessSwarm, startSwarm } from '../test/programs'
import { StreamingDetokenizer } from './detokenizer'
import { ModelTokenizer } from './tokenizer'

describe('the streamed text of a generation equals llama.cpp’s detokenize of it', () => {
  let llama: LlamaModel
  let tokenizer: ModelTokenizer
  /** "Once upon a time 🙂" as llama.cpp tokenizes it: …, ▁, then 🙂 (F0 9F 99 82) as four byte-fallback tokens. */
  let ids: number[]
  let emoji: number[]

  beforeAll(async () => {
    llama = await oracleModel(STORIES_260K)
    tokenizer = await ModelTokenizer.load('stories260k', await readFile(STORIES_260K))
    ids = [...llama.tokenize('Once upon a time 🙂')]
    emoji = ids.slice(-4)
  })
  afterAll(async () => {
    await tokenizer.dispose()
    await llama.dispose()
  })

  /** What a client shows: each token's text as it comes, then what is held at the end. */
  function streamed(tokens: readonly number[]): { pieces: string[]; held: string } {
    const text = new StreamingDetokenizer(tokenizer)
    const pieces = tokens.map((t) => text.push(t))
    return { pieces, held: text.flush() }
  }

  const whole = (tokens: readonly number[]) => llama.detokenize(tokens as Token[], false)

  it('tokenizes as llama.cpp does, with 🙂 as its four byte tokens', () => {
    expect(tokenizer.encode('Once upon a time 🙂')).toEqual([llama.tokens.bos, ...ids])
    // Each byte alone is no character; the four together are 🙂.
    expect(emoji.map((t) => whole([t]))).toEqual(Array(4).fill('\uFFFD'))
    expect(whole(emoji)).toBe('🙂')
  })

  for (const bytes of [1, 2, 3]) {
    it(
      `keeps the last ${bytes} byte${bytes > 1 ? 's' : ''} of a character a generation ended inside, as ` + `U+FFFD`,
      () => {
        const generated = [...ids.slice(0, -4), ...emoji.slice(0, bytes)]
        const { pieces, held } = streamed(generated)
        const expected = whole(generated)
        expect(expected).toBe('Once upon a time \uFFFD')
        // The character's bytes came out as nothing while it was incomplete; the flush gives them.
        expect(pieces.slice(-bytes)).toEqual(Array(bytes).fill(''))
        expect(held).toBe('\uFFFD')
        expect(Buffer.from(pieces.join('') + held)).toEqual(Buffer.from(expected))
      },
    )
  }

  it('gives a whole character with its last byte, and nothing held', () => {
    const generated = ids
    const { pieces, held } = streamed(generated)
    expect(pieces.slice(-4)).toEqual(['', '', '', '🙂'])
    expect(held).toBe('')
    expect(Buffer.from(pieces.join(''))).toEqual(Buffer.from(whole(generated)))
  })

  it('gives a character cut short by the next one as U+FFFD, as llama.cpp does', () => {
    const generated = [...ids.slice(0, -4), ...emoji.slice(0, 2), ...ids.slice(0, 2)]
    const { pieces, held } = streamed(generated)
    expect(held).toBe('')
    expect(Buffer.from(pieces.join(''))).toEqual(Buffer.from(whole(generated)))
    expect(pieces.join('')).toBe('Once upon a time \uFFFD Once upon')
  })
})

describe('a swarm generation that ends inside a character gives its text to the last byte', () => {
  let llama: LlamaModel
  let swarm: InProcessSwarm
  let client: SwarmClient
  let cleanup = async () => {}

  beforeAll(async () => {
    const scratch = await scratchDir('neuron-detokenize-')
    cleanup = scratch.cleanup
    llama = await oracleModel(STORIES_260K)
    swarm = await startSwarm(scratch.dir, STORIES_260K, [[0, 5]])
    client = await SwarmClient.connect(swarm.tracker.url, NodeIdentity.generate())
  }, 120_000)
  afterAll(async () => {
    await client?.close()
    await swarm?.close()
    await llama?.dispose()
    await cleanup()
  })

  it(
    'yields the held bytes of its last character as U+FFFD, so the texts joined equal llama.cpp’s detokenize of ' +
      'its tokens',
    async () => {
      // Near-uniform sampling over stories260K's 512 tokens, half of them byte tokens: the first seed whose 3 tokens
      // end inside a character (the same seeds give the same tokens on every run).
      for (let seed = 0; seed < 200; seed++) {
        const run = client.generate({
          modelId: swarm.manifest.modelId,
          prompt: 'Once upon a time',
          maxTokens: 3,
          stopAtEog: false,
          sampling: { temperature: 10, seed },
        })
        const yielded: { token: number; text: string }[] = []
        let next = await run.next()
        while (!next.done) {
          yielded.push(next.value)
          next = await run.next()
        }
        const tokens = yielded.map((t) => t.token)
        const expected = llama.detokenize(tokens as Token[], false)
        expect(Buffer.from(yielded.map((t) => t.text).join('')), `seed ${seed}: tokens ${tokens}`).toEqual(
          Buffer.from(expected),
        )
        expect(next.value.completionTokens).toBe(3)
        // Incomplete at the end: without the last token's bytes, the text decodes to U+FFFD where it stops.
        if (!expected.endsWith('\uFFFD') || llama.detokenize(tokens.slice(0, -1) as Token[], false).endsWith('\uFFFD'))
          continue
        console.log(`seed ${seed}: tokens ${tokens.join(' ')} end inside a character; text ${JSON.stringify(expected)}`)
        return
      }
      expect.unreachable('no seed below 200 ended a generation inside a character')
    },
  )
})
