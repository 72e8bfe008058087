// `neuron tracker`: its allow-list of keys, its TLS certificate, and its options for re-running sole spans.
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectTracker } from '../dataplane/tracker-connection'
import { NodeIdentity } from '../identity/keys'
import { HAVE_OPENSSL, NEEDS_OPENSSL, selfSignedCertificate } from '../test/certificates'
import { scratchDir } from '../test/models'
import { neuron } from '../test/neuron-command'
import { type NeuronProcess, startNeuron } from '../test/processes'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir())
})
afterAll(() => cleanup())

describe('neuron tracker --allow-keys, --tls-key/--tls-cert and --rerun-dir', () => {
  it('refuses a keys file with a bad line in one line naming the file and the line', async () => {
    const file = join(dir, 'bad-keys.txt')
    await writeFile(file, `# the team\n${NodeIdentity.generate().publicKey}  # ada\nnot-a-key\n`)
    const empty = join(dir, 'empty-keys.txt')
    await writeFile(empty, '# nobody yet\n')
    const db = join(dir, 'never.sqlite')
    const [bad, none, half] = await Promise.all([
      neuron('tracker', '--port', '0', '--db', db, '--allow-keys', file),
      neuron('tracker', '--port', '0', '--db', db, '--allow-keys', empty),
      neuron('tracker', '--port', '0', '--db', db, '--tls-key', file),
    ])
    expect(bad.code).toBe(1)
    expect(bad.stderr.trim().split('\n')).toHaveLength(1)
    expect(bad.stderr).toContain(`--allow-keys ${file} line 3: "not-a-key" is not a public key`)
    expect(none.stderr).toMatch(/lists no keys/)
    expect(half.stderr).toMatch(/--tls-key and --tls-cert go together/)
  })

  it('refuses --rerun-gb without --rerun-dir, and a budget that is not above 0, each in one line', async () => {
    const db = join(dir, 'never-reruns.sqlite')
    const [noDir, zero] = await Promise.all([
      neuron('tracker', '--port', '0', '--db', db, '--rerun-gb', '4'),
      neuron('tracker', '--port', '0', '--db', db, '--rerun-dir', join(dir, 'reruns'), '--rerun-gb', '0'),
    ])
    expect(noDir.code).toBe(1)
    expect(noDir.stderr).toMatch(/--rerun-gb and --rerun-threads need --rerun-dir DIR/)
    expect(zero.code).toBe(1)
    expect(zero.stderr.trim().split('\n')).toHaveLength(1)
    expect(zero.stderr).toMatch(/--rerun-gb is a number of GiB above 0/)
  })

  describe.skipIf(!HAVE_OPENSSL)(`a running private tracker over https${NEEDS_OPENSSL}`, () => {
    let tracker: NeuronProcess | undefined
    afterAll(async () => tracker?.stop())

    it('admits the listed key and refuses any other', async () => {
      const certificate = await selfSignedCertificate(dir)
      const member = NodeIdentity.generate()
      const file = join(dir, 'keys.txt')
      await writeFile(file, `${member.publicKey}\n`)
      tracker = startNeuron([
        'tracker',
        '--port',
        '0',
        '--db',
        join(dir, 'tracker.sqlite'),
        '--allow-keys',
        file,
        '--tls-key',
        certificate.keyPath,
        '--tls-cert',
        certificate.certPath,
      ])
      const url = (await tracker.waitFor(/tracker listening on (https:\/\/127\.0\.0\.1:\d+)/))[1] as string
      const ca = certificate.cert
      const socket = await connectTracker(url, '/clients', member, { ca })
      socket.close()
      await expect(connectTracker(url, '/hosts', NodeIdentity.generate(), { ca })).rejects.toMatchObject({
        code: 'not_admitted',
      })
    })
  })
})
