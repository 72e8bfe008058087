import { afterEach, describe, expect, it } from 'vitest'
import { Manifest } from '../../protocol'
import { OLD_MANIFEST } from '../../test/manifests'
import { readyState, TEST_PROFILE } from '../../test/peers'
import { HostRegistry } from '../hosts/registry'
import type { ModelCatalog } from '../models/catalog'
import { SwarmPlanner } from './swarm-planner'

const sha = (c: string) => c.repeat(64)
/** Four blocks of 1 GB; the manifest forbids a cut at boundary 2 (after block 1). */
const manifest = Manifest.parse({
  ...OLD_MANIFEST,
  nLayer: 4,
  bytesPerBlock: [1e9, 1e9, 1e9, 1e9],
  seams: [true, false, true].map((cut) => ({ cut, values: 64, tokenIds: false, int32PerToken: 0 })),
  artifacts: [
    { file: 'embed.gguf', role: 'embed', blocks: null, bytes: 16384, sha256: sha('b'), tensors: ['token_embd.weight'] },
    {
      file: 'blocks-0-4.gguf',
      role: 'blocks',
      blocks: [0, 4],
      bytes: 16384,
      sha256: sha('c'),
      tensors: ['blk.0.attn_q.weight'],
    },
    { file: 'head.gguf', role: 'head', blocks: null, bytes: 16384, sha256: sha('d'), tensors: ['output_norm.weight'] },
  ],
})
/** The catalog's one answer the planner needs: the manifest of the model. */
const catalog = { get: () => ({ manifest }) } as unknown as ModelCatalog

const registries: HostRegistry[] = []
afterEach(() => {
  for (const r of registries.splice(0)) r.close()
})

describe('the swarm planner reads where the manifest allows a cut', () => {
  it(
    'routes and places the published model only at its allowed cuts, and says how many hosts like this one a ' +
      'route needs',
    () => {
      const registry = new HostRegistry(5000)
      registries.push(registry)
      // Handing over at 2 would be fastest (a's 1 ms blocks, then b's 10 ms ones), but the manifest forbids it.
      registry.hello('aaaaaaaaaaaaaaaaaaaa', 'k1', TEST_PROFILE, readyState(manifest.modelId, [0, 2]))
      registry.hello('bbbbbbbbbbbbbbbbbbbb', 'k2', TEST_PROFILE, {
        ...readyState(manifest.modelId, [1, 4]),
        msPerBlock: 10,
      })
      const planner = new SwarmPlanner(registry, catalog)
      const route = planner.route({ modelId: manifest.modelId, maxTokens: 100, exclude: [] })
      expect(route.hops.map((h) => h.blocks)).toEqual([
        [0, 1],
        [1, 4],
      ])
      const placement = planner.placement(manifest.modelId, TEST_PROFILE, 10, null)
      const options = [placement.proposal, ...placement.alternatives]
      expect(options.length).toBeGreaterThan(0)
      for (const option of options) expect(option?.blocks).not.toContain(2)
      // 4 GB available, 3.2 GB usable: [0, 3) (3 GB, 3 MiB of KV, the embedding) then [3, 4) with the head.
      expect(placement.hostsPerRoute).toBe(2)
    },
  )
})

describe('the swarm planner counts the sessions it routes', () => {
  it(
    'never routes a host more sessions than it runs in a burst between heartbeats, and routes it again once a ' +
      'heartbeat says one closed',
    () => {
      const registry = new HostRegistry(5000)
      registries.push(registry)
      // Two hosts of 4 sessions each, either serving the whole model: 8 routes fit, the 9th does not.
      registry.hello('aaaaaaaaaaaaaaaaaaaa', 'k1', TEST_PROFILE, readyState(manifest.modelId, [0, 4]))
      registry.hello('bbbbbbbbbbbbbbbbbbbb', 'k2', TEST_PROFILE, {
        ...readyState(manifest.modelId, [0, 4]),
        msPerBlock: 2,
      })
      const planner = new SwarmPlanner(registry, catalog)
      let sessions = 0
      const plan = () => {
        const route = planner.route({ modelId: manifest.modelId, maxTokens: 100, exclude: [] })
        const session = `s${sessions++}`
        planner.countRouted(session, route)
        // The same session issued again (a re-plan) is counted once.
        planner.countRouted(session, route)
        return route
      }
      const routed = Array.from({ length: 8 }, () => (plan().hops[0] as { hostId: string }).hostId)
      expect(routed.filter((id) => id.startsWith('a'))).toHaveLength(4)
      expect(routed.filter((id) => id.startsWith('b'))).toHaveLength(4)
      expect(plan).toThrow(/no free session/)
      // a's heartbeat: 3 of the 4 it was routed are open (one ended), so it takes one more
      registry.heartbeat('aaaaaaaaaaaaaaaaaaaa', 3)
      planner.invalidate()
      expect(plan().hops[0]?.hostId).toBe('aaaaaaaaaaaaaaaaaaaa')
      expect(plan).toThrow(/no free session/)
    },
  )
})
