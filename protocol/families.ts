/**
 * GGUF architectures whose cache is plain per-position K and V (the native runtime's batch_refusal says why the others'
 * is not: sliding-window rings, recurrent or compressor states, an indexer). Their sessions batch, roll back, and start
 * from a copy of another session's first positions (a host's prefix cache); the tracker plans forks only for them.
 */
export const PLAIN_KV_ARCHS: ReadonlySet<string> = new Set(['llama', 'qwen2', 'qwen3', 'qwen3moe', 'deepseek2'])

/**
 * Architectures whose blocks keep recurrent (qwen35moe's delta-net) or compressor (deepseek4's) state: the whole past
 * in fixed space, which goes on or starts over but never back. Nothing of theirs rolls back: not a verify step's
 * rejected drafts (speculation is refused), not a conversation's edit (its turn starts anew).
 */
export const UNROLLABLE_ARCHS: ReadonlySet<string> = new Set(['qwen35moe', 'deepseek4'])

/**
 * Architectures whose every per-session cache is kept per position for the whole session: the plain K and V caches,
 * and glm-dsa's (its lightning indexer's keys too). A session rolls back to any earlier position, so a conversation
 * edited in the middle goes on from the edit. gpt-oss's sliding-window rings keep 512 positions of slack: they roll
 * back a verify step's drafts, not a conversation's edit further back.
 */
export const ROLLBACK_ARCHS: ReadonlySet<string> = new Set([...PLAIN_KV_ARCHS, 'glm-dsa'])
