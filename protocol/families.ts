/**
 * GGUF architectures whose cache is plain per-position K and V (the native runtime's batch_refusal says why the others'
 * is not: sliding-window rings, recurrent or compressor states, an indexer). Their sessions batch, roll back, and start
 * from a copy of another session's first positions (a host's prefix cache); the tracker plans forks only for them.
 */
export const PLAIN_KV_ARCHS: ReadonlySet<string> = new Set(['llama', 'qwen2', 'qwen3', 'qwen3moe', 'deepseek2'])
