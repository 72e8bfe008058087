import { z } from 'zod'
import { NodeId } from './identity'
import { LanName } from './lan'
import { rpc } from './rpc'
import { HostSummary, ModelSummary } from './swarm'

// The swarm as the app shows it: its hosts and models, and whether its tracker answers. Part of the app's contract
// (protocol/app.ts).

const Empty = z.object({}).strict()

export const SwarmView = z.object({
  trackerUrl: z.string().url(),
  hosts: z.array(HostSummary),
  models: z.array(ModelSummary),
  /** This computer's host id, to tell it among the hosts. */
  thisHostId: NodeId,
  /** The computers this app paired with on the home network, by host id. */
  paired: z.array(z.object({ hostId: NodeId, name: LanName })).max(1000),
  /**
   * How this app's chats reached hosts that accept no connections: a channel punched through the routers, or the
   * relay (a punch failed); hosts with an endpoint are reached directly, others not yet tried are absent.
   */
  reached: z
    .array(z.object({ hostId: NodeId, path: z.enum(['punched', 'relayed']) }))
    .max(10_000)
    .optional(),
  /**
   * How this computer's host forwards hidden states to the next hops it was given (hop to hop) that take no
   * connections: over a channel it punched to them, or not (relayed: the chat's client carries that seam).
   */
  seams: z
    .array(z.object({ hostId: NodeId, path: z.enum(['punched', 'relayed']) }))
    .max(10_000)
    .optional(),
})
export type SwarmView = z.infer<typeof SwarmView>

/** The backend's link to its tracker, as the sidebar shows it. */
export const TrackerLinkStatus = z.object({
  trackerUrl: z.string(),
  state: z.enum(['connected', 'unreachable']),
  /** Why it is unreachable, in words; null while connected. */
  problem: z.string().nullable(),
  /** When the state last changed, ms since the epoch. */
  since: z.number(),
})
export type TrackerLinkStatus = z.infer<typeof TrackerLinkStatus>

/** swarm.*: the Swarm screen and the sidebar's tracker status. */
export const SwarmMethods = {
  'swarm.get': rpc(Empty, SwarmView),
  /** Whether the tracker answers now (pushed as swarm.status when that changes). */
  'swarm.status': rpc(Empty, TrackerLinkStatus),
} as const
