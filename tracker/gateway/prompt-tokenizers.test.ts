// The gateway's prompt tokenizers on worker threads: the same tokens as the swarm client's tokenizer,
// and a 3.9 MB prompt tokenized without pausing the tracker's event loop.
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { tokenizerGguf } from '../../gguf/tokenizer'
import { STORIES_260K } from '../../test/models'
import { renderChat } from '../../text/chat-template'
import { ModelTokenizer } from '../../text/tokenizer'
import { PromptTokenizers } from './prompt-tokenizers'

const MODEL = 'stories260k'
let gguf: Buffer
let tokenizers: PromptTokenizers
let local: ModelTokenizer

describe(`prompt tokenizers on worker threads`, () => {
  beforeAll(async () => {
    gguf = await tokenizerGguf(STORIES_260K)
    tokenizers = new PromptTokenizers({
      get: () => ({ tokenizer: gguf, manifest: { nVocab: 512 } }) as never,
      manifests: () => [],
    })
    local = await ModelTokenizer.load(MODEL, gguf)
  })
  afterAll(async () => {
    await tokenizers?.close()
    await local?.dispose()
  })

  it('tokenizes prompts and chats as the swarm client does, and measures the longest token', async () => {
    const t = await tokenizers.get(MODEL)
    const ids = local.encode('Once upon a time, a friend')
    expect(await t.encode('Once upon a time, a friend')).toEqual({ count: ids.length, ids })
    expect(await t.encode('Once upon a time, a friend', ids.length - 1)).toEqual({ count: ids.length, ids: undefined })
    const messages = [
      { role: 'system' as const, content: 'You tell short stories.' },
      { role: 'user' as const, content: 'Once upon a time' },
      { role: 'assistant' as const, content: 'there was a cat.' },
      { role: 'user' as const, content: 'And then?' },
    ]
    expect((await t.chat(messages)).ids).toEqual(renderChat(local, messages))
    let longest = 0
    for (let token = 0; token < 512; token++) longest = Math.max(longest, local.decode([token]).length)
    expect(t.longestTokenChars).toBe(longest)
  })

  it('counts the tokens of a 3.9 MB prompt while the event loop keeps turning', async () => {
    const t = await tokenizers.get(MODEL)
    const text = 'Once upon a time there was a cat. '.repeat(115_000)
    let last = performance.now()
    let longestPause = 0
    const ticker = setInterval(() => {
      const now = performance.now()
      longestPause = Math.max(longestPause, now - last)
      last = now
    }, 5)
    const t0 = performance.now()
    const { count } = await t.encode(text, 2048)
    clearInterval(ticker)
    const elapsed = performance.now() - t0
    console.log(
      `3.9 MB tokenized on the worker in ${elapsed.toFixed(0)} ms; the event loop's longest pause ` +
        `${longestPause.toFixed(1)} ms`,
    )
    expect(count).toBeGreaterThan(1_000_000)
    // On the event loop the pause was the whole tokenizing (2 s on an idle machine); on a loaded one (2 shared
    // cores) the worker's CPU delays the loop too, so the bound is 50 ms or a tenth of the tokenizing.
    expect(longestPause).toBeLessThan(Math.max(50, elapsed / 10))
  })

  it('starts a new worker when one stops', async () => {
    const t = await tokenizers.get(MODEL)
    await (t as unknown as { terminate(): Promise<void> }).terminate()
    await expect(t.encode('Once')).rejects.toMatchObject({ code: 'tokenizer_failed' })
    expect((await (await tokenizers.get(MODEL)).encode('Once')).ids).toEqual(local.encode('Once'))
  })
})
