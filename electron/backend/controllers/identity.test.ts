import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { NodeIdentity } from '../../../identity/keys'
import { readAppReply } from '../../../protocol'
import { scratchDir } from '../../../test/models'
import { AppBackend } from '../backend'

let cleanup: () => Promise<void> = async () => {}
afterEach(() => cleanup())

describe('importing an identity', () => {
  it('replaces the key file whole, so the next start is the imported identity, with no temp file left', async () => {
    const scratch = await scratchDir('neuron-identity-')
    cleanup = scratch.cleanup
    const start = () => AppBackend.start({ dataDir: scratch.dir, trackerUrl: null, defaultModels: [], threads: 1 })
    const imported = NodeIdentity.generate()
    let backend = await start()
    try {
      const settings = readAppReply(
        'identity.import',
        await backend.call('identity.import', { pem: imported.exportPrivatePem() }),
      )
      expect(settings.publicKey).toBe(imported.publicKey)
      expect(await readFile(join(scratch.dir, 'identity.pem'), 'utf8')).toBe(imported.exportPrivatePem())
      expect((await readdir(scratch.dir)).filter((f) => f.startsWith('identity.pem.'))).toEqual([])
      await backend.close()
      // and once closed, no write of any file is left half done (a settings save may still run while it serves)
      expect((await readdir(scratch.dir)).filter((f) => f.endsWith('.tmp'))).toEqual([])
      backend = await start()
      expect(readAppReply('settings.get', await backend.call('settings.get', {})).hostId).toBe(imported.id)
    } finally {
      await backend.close()
    }
  })
})
