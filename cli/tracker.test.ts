// `neuron tracker`: its allow-list of keys, its TLS certificate, its options for re-running sole spans, its STUN port.
import { randomBytes } from 'node:crypto'
import { createSocket } from 'node:dgram'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { connectTracker } from '../dataplane/tracker-connection'
import { NodeIdentity } from '../identity/keys'
import { HAVE_OPENSSL, NEEDS_OPENSSL, selfSignedCertificate } from '../test/certificates'
import { scratchDir } from '../test/models'
import { neuron } from '../test/neuron-command'
import { freePort } from '../test/postgres'
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

/** Whether a STUN Binding Request to 127.0.0.1:`port` gets its Binding Success Response within a second. */
async function stunAnswers(port: number): Promise<boolean> {
  const socket = createSocket('udp4')
  const request = Buffer.alloc(20)
  request.writeUInt16BE(0x0001, 0)
  request.writeUInt32BE(0x2112a442, 4)
  randomBytes(12).copy(request, 8)
  try {
    return await new Promise<boolean>((resolve) => {
      socket.on('error', () => resolve(false))
      socket.once('message', (m) =>
        resolve(m.readUInt16BE(0) === 0x0101 && m.subarray(8, 20).equals(request.subarray(8))),
      )
      setTimeout(() => resolve(false), 1000)
      socket.send(request, port, '127.0.0.1')
    })
  } finally {
    socket.close()
  }
}

describe('neuron tracker --stun-port', () => {
  it('answers STUN on the UDP port numbered as its --port by default, a free one for 0, none when off', async () => {
    const port = await freePort()
    const trackers = [
      startNeuron(['tracker', '--port', String(port), '--db', ':memory:']),
      startNeuron(['tracker', '--port', '0', '--db', ':memory:']),
      startNeuron(['tracker', '--port', '0', '--stun-port', 'off', '--db', ':memory:']),
    ]
    try {
      const said = await Promise.all(trackers.map((t) => t.waitFor(/tracker listening on .*/)))
      const [same, free, off] = said.map((m) => /STUN on udp port (\d+)/.exec(m[0])?.[1])
      expect(same).toBe(String(port))
      expect(free).toMatch(/^[1-9]\d*$/)
      expect(off).toBeUndefined()
      expect(await stunAnswers(port)).toBe(true)
      expect(await stunAnswers(Number(free))).toBe(true)
    } finally {
      await Promise.all(trackers.map((t) => t.stop()))
    }
    const refused = await neuron('tracker', '--port', '0', '--db', ':memory:', '--stun-port', '70000')
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/--stun-port is a UDP port from 0 to 65535 \(0: a free one\) or off, not "70000"/)
  })
})
