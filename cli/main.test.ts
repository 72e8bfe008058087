// `neuron` itself: its help, and what it says to a command it does not know.
import { describe, expect, it } from 'vitest'
import { neuron } from '../test/neuron-command'

describe('neuron command', () => {
  it('--help lists the commands, and each has its own --help with an example', async () => {
    const r = await neuron('--help')
    expect(r.code).toBe(0)
    for (const c of ['inspect', 'pack', 'gen-model']) {
      expect(r.stdout).toContain(c)
      const sub = await neuron(c, '--help')
      expect(sub.code).toBe(0)
      expect(sub.stdout).toMatch(/Example/)
    }
  })

  it('rejects an unknown command with a pointer to --help', async () => {
    const r = await neuron('fly')
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/unknown command "fly".*--help/)
  })
})
