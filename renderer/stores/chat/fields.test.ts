import { describe, expect, it } from 'vitest'
import { DEFAULT_CHAT_SETTINGS } from '../../../protocol/app'
import {
  contextFit,
  contextRefusal,
  conversationSettings,
  parseField,
  parseStops,
  promptMessages,
  samplingRequest,
  stopsText,
} from './fields'
import type { Conversation } from './initialState'

const conversation = (settings?: Conversation['settings']): Conversation => ({
  id: 'c1',
  title: 'Cats',
  modelId: 'stories260k',
  ...(settings === undefined ? {} : { settings }),
  messages: [
    { id: 'u1', role: 'user', content: 'Hi', createdAt: 1 },
    { id: 'a1', role: 'assistant', content: '', createdAt: 2, status: 'error' },
    { id: 'u2', role: 'user', content: 'Again', createdAt: 3 },
  ],
  createdAt: 1,
  updatedAt: 3,
})

describe('chat fields', () => {
  it('reads a field’s text as its number, or says what is wrong with it in words', () => {
    expect(parseField('temperature', ' 0.7 ')).toEqual({ ok: true, value: 0.7 })
    expect(parseField('maxTokens', '')).toEqual({
      ok: false,
      message: 'Max tokens takes a whole number from 1 to 4096; it is empty.',
    })
    expect(parseField('maxTokens', '12.5')).toEqual({
      ok: false,
      message: 'Max tokens takes a whole number from 1 to 4096; 12.5 is not whole.',
    })
    expect(parseField('temperature', '3')).toEqual({
      ok: false,
      message: 'Temperature takes a number from 0 to 2; 3 is out of range.',
    })
    expect(parseField('topP', 'lots')).toEqual({
      ok: false,
      message: 'Top-p takes a number from 0.01 to 1; "lots" is not a number.',
    })
    // An empty seed is a choice: a random one for every answer.
    expect(parseField('seed', '')).toEqual({ ok: true, value: null })
    expect(parseField('seed', '-1').ok).toBe(false)
  })

  it('gives conversations kept before settings existed the defaults: some randomness, not greedy', () => {
    expect(conversationSettings(conversation())).toEqual(DEFAULT_CHAT_SETTINGS)
    expect(DEFAULT_CHAT_SETTINGS.temperature).toBeGreaterThan(0)
    expect(DEFAULT_CHAT_SETTINGS.seed).toBeNull()
  })

  it('sends the system prompt first, leaves failed answers out and adds the draft as the next turn', () => {
    const withSystem = conversation({ ...DEFAULT_CHAT_SETTINGS, systemPrompt: 'You tell stories.' })
    expect(promptMessages(withSystem, ' More ')).toEqual([
      { role: 'system', content: 'You tell stories.' },
      { role: 'user', content: 'Hi' },
      { role: 'user', content: 'Again' },
      { role: 'user', content: 'More' },
    ])
    expect(promptMessages(conversation(), '  ').map((m) => m.content)).toEqual(['Hi', 'Again'])
  })

  it('leaves the seed out when it is random, so the backend draws a fresh one for every answer', () => {
    expect(samplingRequest(DEFAULT_CHAT_SETTINGS)).toEqual({
      temperature: 0.7,
      topP: 0.95,
      topK: 40,
      minP: 0.05,
      repeatPenalty: 1,
    })
    expect(samplingRequest({ ...DEFAULT_CHAT_SETTINGS, seed: 42 }).seed).toBe(42)
    expect(samplingRequest({ ...DEFAULT_CHAT_SETTINGS, stop: ['User:'] }).stop).toEqual(['User:'])
  })

  it('says how the prompt and the answer fill the context, and refuses with the counts when they do not fit', () => {
    expect(contextFit({ promptTokens: 100, contextLength: 2048 }, 64)).toEqual({
      text: '100 + 64 tokens of 2048',
      over: false,
      maxTokens: 64,
      capped: false,
    })
    expect(contextFit({ promptTokens: 1984, contextLength: 2048 }, 64).capped).toBe(false)
    expect(contextRefusal({ promptTokens: 3950, contextLength: 2048 })).toMatchObject({
      code: 'context_exceeded',
      message: expect.stringMatching(/^This prompt is 3950 tokens, past the model's context of 2048 tokens/),
    })
  })

  it('caps max tokens to what the context leaves after the prompt, saying so, instead of refusing', () => {
    expect(contextFit({ promptTokens: 20, contextLength: 2048 }, 4096)).toEqual({
      text: '20 + 2028 tokens of 2048 · max tokens capped to fit',
      over: false,
      maxTokens: 2028,
      capped: true,
    })
    expect(contextFit({ promptTokens: 2047, contextLength: 2048 }, 64)).toMatchObject({ over: false, maxTokens: 1 })
    // Only a prompt that fills the context alone is over.
    expect(contextFit({ promptTokens: 2048, contextLength: 2048 }, 64)).toMatchObject({ over: true, maxTokens: 0 })
  })

  it("clamps the max tokens field to the model's context", () => {
    expect(parseField('maxTokens', '4096', 2048)).toEqual({
      ok: false,
      message: 'Max tokens takes a whole number from 1 to 2048; 4096 is out of range.',
    })
    expect(parseField('maxTokens', '2048', 2048)).toEqual({ ok: true, value: 2048 })
    // A model with a longer context keeps the field's own bound.
    expect(parseField('maxTokens', '4096', 32_768)).toEqual({ ok: true, value: 4096 })
  })

  it(
    'reads stop sequences one a line, with \\n for a line break, and says what is wrong with too many or ' + 'too long',
    () => {
      expect(parseStops('User:\n\n  \n\\n\\nEnd\\t')).toEqual({ ok: true, value: ['User:', '\n\nEnd\t'] })
      expect(stopsText(['User:', '\n\nEnd'])).toBe('User:\n\\n\\nEnd')
      expect(parseStops('a\nb\nc\nd\ne')).toEqual({
        ok: false,
        message: 'Stop sequences: up to 4, one a line; 5 given.',
      })
      expect(parseStops('x'.repeat(65))).toMatchObject({ ok: false, message: expect.stringMatching(/each up to 64/) })
      expect(parseField('minP', '1.5')).toEqual({
        ok: false,
        message: 'Min-p takes a number from 0 to 1; 1.5 is out of range.',
      })
    },
  )

  it('gives a conversation kept before min-p and stop sequences existed their defaults', () => {
    const { minP: _, stop: __, ...older } = DEFAULT_CHAT_SETTINGS
    expect(conversationSettings(conversation({ ...older, temperature: 1 }))).toMatchObject({ minP: 0.05, stop: [] })
  })
})
