import { describe, expect, it } from 'vitest'
import type { ApiAccessView } from '../../../protocol/app'
import { apiExamples, exampleModel, KEY_PLACEHOLDER } from './selectors'

const view: ApiAccessView = {
  endpoint: 'http://127.0.0.1:7070/v1',
  lanOpen: false,
  embedded: true,
  modelIds: ['stories260k', 'other'],
  key: null,
}

describe('API access selectors', () => {
  it('fills the examples with the endpoint, the model and the key on screen', () => {
    const examples = apiExamples(view, exampleModel(view), 'nk-secret')
    expect(examples.map((e) => e.id)).toEqual(['curl', 'python', 'javascript'])
    for (const e of examples) {
      expect(e.code).toContain('http://127.0.0.1:7070/v1')
      expect(e.code).toContain('stories260k')
      expect(e.code).toContain('nk-secret')
    }
    expect(examples[0]?.code).toContain('curl http://127.0.0.1:7070/v1/chat/completions')
    expect(examples[1]?.code).not.toContain('import os')
  })

  it(
    'puts an environment variable where the key goes once it is no longer shown, and a placeholder model while ' +
      'none is listed',
    () => {
      const [curl, python, javascript] = apiExamples(view, 'm', null)
      expect(curl?.code).toContain(`Bearer ${KEY_PLACEHOLDER}`)
      expect(python?.code).toContain('os.environ["NEURON_KEY"]')
      expect(javascript?.code).toContain('process.env.NEURON_KEY')
      expect(exampleModel({ ...view, modelIds: [] })).toBe('MODEL_ID')
    },
  )
})
