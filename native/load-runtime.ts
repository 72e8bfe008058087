import { availableParallelism } from 'node:os'
import { type NativeRuntime, nativeModule } from './binding'
import { ShardRuntimeError } from './errors'

// Loading blocks [a, b) of a GGUF model into the native runtime: the options checked first, then the addon whose
// ggml build fits the device asked for.

export type ShardRuntimeOptions = {
  /** GGUF files, each with the model's full metadata and some of its tensors (an artifact set or one whole model). */
  artifacts: string[]
  /** Blocks [from, to) this runtime serves. */
  blocks: [number, number]
  /** First hop: takes token ids and owns token_embd.weight. */
  embed: boolean
  /** Last hop: output norm + lm_head; returns logits and samples. */
  head: boolean
  /** CPU threads; never more than the machine's cores (ggml slows down badly when oversubscribed). */
  threads: number
  /** 'auto' (a GPU when one is registered, else the CPU), 'cpu', or a ggml device name such as 'CUDA0'. */
  device?: string
  /** Flash attention, as llama.cpp picks by default on CPU (default true). */
  flashAttention?: boolean
  /**
   * Map the artifact files and use weights that need no repacking in place, sharing the page cache's copy a
   * seeding host already holds (default true; NEURON_NO_MMAP=1 turns it off, for a baseline).
   */
  mmap?: boolean
  /**
   * Map those weights with 2 MB pages where the kernel can (Linux with transparent huge pages not at `never`): a
   * step reads every weight, and 4 KB pages cost it 10-20 % in TLB misses (default true; NEURON_NO_HUGE_PAGES=1
   * turns it off, for a baseline).
   */
  hugePages?: boolean
}

/** The native runtime over `options`' blocks, with the devices registered and why GPU builds failed to load. */
export async function loadNativeRuntime(
  options: ShardRuntimeOptions,
): Promise<{ native: NativeRuntime; devices: string[]; problems: string[] }> {
  const [from, to] = options.blocks
  if (!Number.isInteger(options.threads) || options.threads < 1) {
    throw new ShardRuntimeError('BAD_OPTIONS', `threads must be a positive integer, got ${options.threads}`, {
      threads: String(options.threads),
    })
  }
  // ggml's threads spin at barriers: more threads than cores is 20-1000x slower, never faster
  const cores = availableParallelism()
  if (options.threads > cores) {
    throw new ShardRuntimeError('BAD_OPTIONS', `threads ${options.threads} exceeds this machine's ${cores} cores`, {
      threads: options.threads,
      cores,
    })
  }
  const device = options.device ?? 'auto'
  const { native, devices, problems } = nativeModule(device.toLowerCase() !== 'cpu')
  const rt = await native.loadRuntime({
    artifacts: options.artifacts,
    from,
    to,
    embed: options.embed,
    head: options.head,
    threads: options.threads,
    device,
    flashAttention: options.flashAttention ?? true,
    mmap: options.mmap ?? process.env.NEURON_NO_MMAP !== '1',
    hugePages: options.hugePages ?? process.env.NEURON_NO_HUGE_PAGES !== '1',
  })
  return { native: rt, devices, problems }
}
