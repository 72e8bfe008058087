// `neuron gen-model`: shapes it refuses, each in one line, before it writes anything.
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scratchDir } from '../test/models'
import { neuron } from '../test/neuron-command'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir())
})
afterAll(() => cleanup())

describe('neuron command', () => {
  it('gen-model refuses impossible shapes with one clear line', async () => {
    const out = join(dir, 'never.gguf')
    const base = [
      'gen-model',
      '--arch',
      'llama',
      '--blocks',
      '2',
      '--heads',
      '4',
      '--ff',
      '128',
      '--vocab',
      '300',
      '--out',
      out,
    ]
    const odd = await neuron(...base, '--embd', '48', '--type', 'q8_0')
    expect(odd.code).toBe(1)
    expect(odd.stderr.trim().split('\n')).toHaveLength(1)
    expect(odd.stderr).toMatch(/multiples of 32/)
    const badType = await neuron(...base, '--embd', '64', '--type', 'q5_k')
    expect(badType.stderr).toMatch(/--type must be one of f32, f16, q8_0, q4_0/)
    expect(await readdir(dir)).not.toContain('never.gguf')
  })

  it('still takes --layers, the old name of --blocks, and says it is an alias', async () => {
    const out = join(dir, 'never.gguf')
    const r = await neuron(
      'gen-model',
      '--arch',
      'llama',
      '--layers',
      '2',
      '--heads',
      '4',
      '--ff',
      '128',
      '--vocab',
      '300',
      '--out',
      out,
      '--embd',
      '48',
      '--type',
      'q8_0',
    )
    expect(r.stderr).toMatch(/--layers is an alias of --blocks; say --blocks 2/)
    expect(r.stderr).toMatch(/multiples of 32/)
  })

  it('gen-model refuses expert shapes llama.cpp would abort on, with one clear line', async () => {
    const out = join(dir, 'never.gguf')
    const base = [
      'gen-model',
      '--arch',
      'deepseek2',
      '--blocks',
      '3',
      '--embd',
      '256',
      '--heads',
      '4',
      '--ff',
      '256',
      '--vocab',
      '300',
      '--type',
      'q4_K_M',
    ]
    const groups = await neuron(...base, '--experts', '6', '--expert-groups', '4', '--out', out)
    expect(groups.code).toBe(1)
    expect(groups.stderr.trim().split('\n')).toHaveLength(1)
    expect(groups.stderr).toMatch(/--experts \(6\) must split into --expert-groups \(4\) of at least 2 experts each/)
    const wrongArch = await neuron(
      'gen-model',
      '--arch',
      'qwen3moe',
      ...base.slice(3),
      '--sliding-window',
      '64',
      '--out',
      out,
    )
    expect(wrongArch.stderr.trim()).toMatch(
      /--sliding-window does not apply to qwen3moe; it takes --experts --experts-used --expert-ff\.$/,
    )
    expect(await readdir(dir)).not.toContain('never.gguf')
  })

  it(
    'gen-model refuses qwen35moe, glm-dsa and deepseek4 shapes ' + 'llama.cpp would abort on, with one clear line each',
    async () => {
      const out = join(dir, 'never.gguf')
      const shape = [
        '--blocks',
        '4',
        '--embd',
        '256',
        '--heads',
        '4',
        '--ff',
        '256',
        '--vocab',
        '300',
        '--type',
        'f16',
        '--out',
        out,
      ]
      const cases: [string[], RegExp][] = [
        [
          ['qwen35moe', '--full-attention-interval', '5'],
          new RegExp(
            String.raw`^neuron gen-model: error \[\w+\]: --full-attention-interval must be 1 to --blocks \(4\) ` +
              String.raw`so some block has full attention, not 5\.$`,
          ),
        ],
        [
          ['glm-dsa', '--indexer-head-size', '32'],
          new RegExp(
            String.raw`^neuron gen-model: error \[\w+\]: --indexer-head-size must be a power of two of at least 64 ` +
              String.raw`for glm-dsa, not 32\.$`,
          ),
        ],
        [
          ['deepseek4', '--compress-ratios', '0,4,4,0'],
          /^neuron gen-model: error \[\w+\]: --compress-ratios \(0,4,4,0\) needs at least one 4 and one 128 block/,
        ],
        [
          ['deepseek4', '--compress-ratios', '4,128,8,0'],
          /^neuron gen-model: error \[\w+\]: --compress-ratios takes only 0, 4 and 128/,
        ],
      ]
      for (const [[arch, ...flags], message] of cases) {
        const r = await neuron('gen-model', '--arch', arch as string, ...shape, ...flags)
        expect(r.code, r.stderr).toBe(1)
        expect(r.stderr.trim().split('\n')).toHaveLength(1)
        expect(r.stderr.trim()).toMatch(message)
      }
      expect(await readdir(dir)).not.toContain('never.gguf')
    },
  )
})
