import { z } from 'zod'
import { HardwareProfile, ServingState } from './host-state'
import { NodeId, PublicKey } from './identity'
import { ModelId } from './manifest'

/**
 * What tracker instances of one swarm tell each other over Redis (Socket.IO's server-side events,
 * tracker/cluster/): the hosts each holds a connection to, their heartbeats in one batch per
 * interval, and which stored records (a host's checks, the catalog) changed. Instances are the
 * operator's own, but what comes off Redis is parsed like any other message.
 */

/** An instance's id: random per process, so a restarted instance is a new one. */
export const InstanceId = z.string().min(8).max(64)

/** Most hosts one message carries: an instance's heartbeat batch or its answer to a snapshot. */
export const MAX_CLUSTER_HOSTS = 100_000

/** A host as the instance holding its connection sees it. */
export const ClusterHost = z.object({
  instance: InstanceId,
  hostId: NodeId,
  publicKey: PublicKey,
  profile: HardwareProfile,
  state: ServingState,
  online: z.boolean(),
  /** What its instance's probe verified it serves (`<modelId>@<from>-<to>`), null before a pass. */
  verifiedFor: z.string().max(300).nullable(),
})
export type ClusterHost = z.infer<typeof ClusterHost>

/** Every host an instance holds that is online, with its sessions now: one message per heartbeat interval. */
export const ClusterBeats = z.object({
  instance: InstanceId,
  beats: z.array(z.tuple([NodeId, z.number().int().min(0).max(1_000_000)])).max(MAX_CLUSTER_HOSTS),
})
export type ClusterBeats = z.infer<typeof ClusterBeats>

/** A stored record changed: read it again (a host's checks after a ban; a model's after a publish). */
export const ClusterChanged = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('checks'), hostId: NodeId }),
  z.object({ kind: z.literal('catalog'), modelId: ModelId }),
])
export type ClusterChanged = z.infer<typeof ClusterChanged>

export const ClusterSnapshot = z.object({ hosts: z.array(ClusterHost).max(MAX_CLUSTER_HOSTS) })
