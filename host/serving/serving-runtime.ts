import type { SessionOptions, ShardSession } from '../../native'

/** What a shard server needs of one session: the native ShardSession, or a wrapper around one. */
export type ServingSession = Pick<ShardSession, 'forward' | 'sample' | 'close' | 'blocks' | 'takesTokens'>

/** What a host needs of its loaded blocks: the native ShardRuntime, or a wrapper around one. */
export interface ServingRuntime {
  openSession(options: SessionOptions): ServingSession
  dispose(): void
}
