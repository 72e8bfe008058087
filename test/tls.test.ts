// https:// and wss:// end to end with real processes on loopback and a self-signed certificate: a
// tracker and a host serving TLS, a publisher and the host trusting it by NODE_EXTRA_CA_CERTS, a
// client by an explicit CA. Greedy tokens must equal the same chat over plain http and ws.
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SwarmClient } from '../client/swarm-client'
import { packModel } from '../gguf/pack'
import { NodeIdentity } from '../identity/keys'
import type { Manifest, RouteHop } from '../protocol'
import { HAVE_OPENSSL, NEEDS_OPENSSL, selfSignedCertificate, type TestCertificate } from './certificates'
import { STORIES_260K, scratchDir } from './models'
import { type NeuronProcess, startNeuron } from './processes'
import { startSwarm } from './programs'

const PROMPT = [1, 403, 261, 407, 300]
const TOKENS = 24
let dir = ''
let cleanup: () => Promise<void> = async () => {}
const processes: NeuronProcess[] = []
let certificate: TestCertificate
let trackerUrl = ''
let manifest: Manifest

function start(args: string[], env: NodeJS.ProcessEnv = {}): NeuronProcess {
  const p = startNeuron(args, env)
  processes.push(p)
  return p
}

async function greedy(client: SwarmClient, modelId: string): Promise<{ tokens: number[]; route: readonly RouteHop[] }> {
  let route: readonly RouteHop[] = []
  const tokens: number[] = []
  const run = client.generate({
    modelId,
    prompt: PROMPT,
    maxTokens: TOKENS,
    stopAtEog: false,
    onRoute: (hops) => (route = hops),
  })
  for await (const t of run) tokens.push(t.token)
  return { tokens, route }
}

describe.skipIf(!HAVE_OPENSSL)(`TLS end to end: an https tracker and a wss host${NEEDS_OPENSSL}`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
    certificate = await selfSignedCertificate(dir)
    const tls = ['--tls-key', certificate.keyPath, '--tls-cert', certificate.certPath]
    const trust = { NODE_EXTRA_CA_CERTS: certificate.certPath }
    manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed'), blocksPerArtifact: 2 })
    const tracker = start([
      'tracker',
      '--port',
      '0',
      '--db',
      join(dir, 'tracker.sqlite'),
      '--heartbeat-ms',
      '500',
      '--new-key-grant-micro',
      '10000000',
      ...tls,
    ])
    trackerUrl = (await tracker.waitFor(/tracker listening on (https:\/\/127\.0\.0\.1:\d+)/))[1] as string
    const publisher = start(
      ['publish', join(dir, 'packed'), '--tracker', trackerUrl, '--data-dir', join(dir, 'publisher')],
      trust,
    )
    await publisher.waitFor(/published stories260k/)
    const host = start(
      [
        'host',
        '--tracker',
        trackerUrl,
        '--model',
        manifest.modelId,
        '--blocks',
        `0:${manifest.nLayer}`,
        '--data-dir',
        join(dir, 'host'),
        '--threads',
        '1',
        ...tls,
      ],
      trust,
    )
    await host.waitFor(/ ready blocks \[\d+, \d+\) wss:\/\/127\.0\.0\.1:\d+/, 90_000)
  }, 180_000)
  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop()))
    await cleanup()
  })

  it('a greedy chat over https and wss gives the same tokens as over plain http and ws', async () => {
    const client = await SwarmClient.connect(trackerUrl, NodeIdentity.generate(), undefined, { ca: certificate.cert })
    let secure: Awaited<ReturnType<typeof greedy>>
    try {
      secure = await greedy(client, manifest.modelId)
    } finally {
      client.close()
    }
    expect(secure.route.map((h) => h.endpoint)).toEqual([expect.stringMatching(/^wss:\/\/127\.0\.0\.1:\d+\/$/)])
    expect(secure.tokens).toHaveLength(TOKENS)

    const plain = await startSwarm(join(dir, 'plain'), STORIES_260K, [[0, manifest.nLayer]])
    try {
      expect(plain.tracker.url).toMatch(/^http:/)
      const reference = await SwarmClient.connect(plain.tracker.url, NodeIdentity.generate())
      try {
        const { tokens, route } = await greedy(reference, plain.manifest.modelId)
        expect(route[0]?.endpoint).toMatch(/^ws:/)
        expect(secure.tokens).toEqual(tokens)
      } finally {
        reference.close()
      }
    } finally {
      await plain.close()
    }
  })

  it('verifies the certificate: a client that does not trust it is refused', async () => {
    await expect(SwarmClient.connect(trackerUrl, NodeIdentity.generate())).rejects.toMatchObject({
      code: 'tracker_unreachable',
      message: expect.stringMatching(/self[- ]signed certificate/),
    })
  })
})
