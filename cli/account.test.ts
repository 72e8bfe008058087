// `neuron account create`: an account in a running tracker’s database.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { scratchDir } from '../test/models'
import { neuron } from '../test/neuron-command'
import { Tracker } from '../tracker/server'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir())
})
afterAll(() => cleanup())

describe('neuron account', () => {
  it('creates an account in a running tracker’s database whose key the gateway accepts', async () => {
    const db = join(dir, 'accounts.sqlite')
    const tracker = await Tracker.start({ dbPath: db })
    try {
      const r = await neuron('account', 'create', '--db', db, '--name', 'me', '--grant-micro', '5000000')
      expect(r.code).toBe(0)
      const created = JSON.parse(r.stdout) as { api_key: string; grant_micro: number; name: string }
      expect(created).toMatchObject({ name: 'me', grant_micro: 5_000_000, api_key: expect.stringMatching(/^nk-/) })
      const models = await fetch(`${tracker.url}/v1/models`, {
        headers: { authorization: `Bearer ${created.api_key}` },
      })
      expect(models.status).toBe(200)
      const wrong = await fetch(`${tracker.url}/v1/models`, { headers: { authorization: 'Bearer nk-not-a-key' } })
      expect(wrong.status).toBe(401)
    } finally {
      await tracker.close()
    }
    const missing = await neuron('account', 'create', '--db', join(dir, 'no-such.sqlite'))
    expect(missing.code).toBe(1)
    expect(missing.stderr).toMatch(/no-such\.sqlite does not exist/)
  })
})
