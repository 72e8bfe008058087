// The programs as tests meet them. A program's tests may need another program for real (a host's
// tests a real tracker on loopback, the tracker's tests a real publisher's torrent); they take it
// from here, so no folder of product code imports another program, not even from its tests.
// startSwarm: a whole swarm in one process (a tracker, a published model, hosts serving given block
// ranges) for the gateway's tests and benches. Real parts on loopback; nothing mocked.
import { join } from 'node:path'
import { packModel } from '../gguf/pack'
import { tokenizerGguf } from '../gguf/tokenizer'
import { createModelTorrent } from '../host/artifacts/model-torrent'
import { Host, type HostOptions } from '../host/host'
import { computeProbeSet } from '../host/probes'
import { publishModel } from '../host/publish'
import { NodeIdentity } from '../identity/keys'
import { encodeProbeSet, type Manifest } from '../protocol'
import type { GatewayOptions } from '../tracker/gateway/deps'
import { Tracker, type TrackerOptions } from '../tracker/server'

export { createModelTorrent } from '../host/artifacts/model-torrent'
export { Host } from '../host/host'
export { Tracker } from '../tracker/server'

/** Tracker checks for tests whose own traffic must be all the hosts see: no random probes, no audits. */
export const QUIET_CHECKS = {
  probationProbeEveryMs: 3_600_000,
  probeEveryMs: 3_600_000,
  auditRate: 0,
  probationAuditRate: 0,
} as const

export interface InProcessSwarm {
  readonly tracker: Tracker
  readonly manifest: Manifest
  readonly hosts: Host[]
  /** Starts a host of `blocks`; `make` builds it from its options (a test's LyingHost), else an honest Host. */
  addHost(blocks: readonly [number, number], make?: (options: HostOptions) => Host): Promise<Host>
  close(): Promise<void>
}

export async function startSwarm(
  dir: string,
  model: string,
  ranges: readonly (readonly [number, number])[],
  options: Partial<TrackerOptions> = {},
): Promise<InProcessSwarm> {
  // New keys get a grant: a test's clients pay like a public tracker's first-time users.
  const tracker = await Tracker.start({
    dbPath: join(dir, 'tracker.sqlite'),
    keyPath: join(dir, 'tracker.sqlite.tracker-key.pem'),
    heartbeatMs: 500,
    newKeyGrantMicro: 10_000_000,
    ...options,
  })
  const manifest = await packModel({ source: model, out: join(dir, 'packed'), blocksPerArtifact: 1 })
  const publication = await publishModel(
    join(dir, 'packed'),
    tracker.url,
    NodeIdentity.generate(),
    join(dir, 'publisher'),
  )
  const hosts: Host[] = []
  const addHost = async (blocks: readonly [number, number], make = (options: HostOptions) => new Host(options)) => {
    const host = make({
      trackerUrl: tracker.url,
      dataDir: join(dir, `host-${hosts.length}`),
      modelId: manifest.modelId,
      blocks: blocks,
      threads: 1,
    })
    hosts.push(host)
    await host.start()
    return host
  }
  for (const r of ranges) await addHost(r)
  return {
    tracker,
    manifest,
    hosts,
    addHost,
    async close() {
      for (const h of hosts) await h.stop(500)
      await publication.close()
      await tracker.close()
    },
  }
}

/**
 * `model` packed into `out` with what `model.publish` takes: the manifest, a torrent announcing to `tracker`, the
 * tokenizer, two probes (encoded).
 */
export async function packForPublish(
  tracker: Tracker,
  model: string,
  out: string,
  modelId?: string,
): Promise<{ manifest: Manifest; torrent: Buffer; tokenizer: Buffer; probes: Uint8Array }> {
  const manifest = await packModel({
    source: model,
    out,
    blocksPerArtifact: 2,
    ...(modelId === undefined ? {} : { modelId }),
  })
  const torrent = await createModelTorrent(out, manifest, [tracker.announceUrl])
  return {
    manifest,
    torrent,
    tokenizer: await tokenizerGguf(join(out, 'head.gguf')),
    probes: encodeProbeSet(await computeProbeSet(manifest, out, { threads: 1, count: 2 })),
  }
}

/** Creates an account through the admin route; returns its id and API key. */
export async function createAccount(
  trackerUrl: string,
  adminToken: string,
  body: Record<string, unknown> = {},
): Promise<{ accountId: string; apiKey: string }> {
  const res = await fetch(`${trackerUrl}/admin/accounts`, {
    method: 'POST',
    headers: { authorization: `Bearer ${adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
  const json = (await res.json()) as { account_id: string; api_key: string }
  if (res.status !== 201) throw new Error(`account creation failed: ${res.status} ${JSON.stringify(json)}`)
  return { accountId: json.account_id, apiKey: json.api_key }
}

/**
 * The gateway tests' swarm: two hosts of `model` (blocks [0, 3) and [3, 5)) behind a tracker whose gateway takes
 * `gateway` (its admin token at least), and an account made through the admin route, named `account`.
 */
export async function startGatewaySwarm(
  dir: string,
  model: string,
  gateway: GatewayOptions & { readonly adminToken: string },
  account: string,
  ranges: readonly (readonly [number, number])[] = [
    [0, 3],
    [3, 5],
  ],
): Promise<{ swarm: InProcessSwarm; accountId: string; apiKey: string }> {
  const swarm = await startSwarm(dir, model, ranges, { gateway })
  return { swarm, ...(await createAccount(swarm.tracker.url, gateway.adminToken, { name: account })) }
}
