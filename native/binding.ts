// Loads the compiled addon and registers ggml's backends (once per process).
import { existsSync, readdirSync } from 'node:fs'
import { createRequire } from 'node:module'
import { join } from 'node:path'
import { PACKAGE_ROOT } from '../gguf/package-root'
import { ShardRuntimeError, toShardRuntimeError } from './errors'

export type NativeInfo = {
  arch: string
  nEmbd: number
  nVocab: number
  nLayer: number
  nHead: number
  nHeadKv: number
  blocks: [number, number]
  embed: boolean
  head: boolean
  device: string
  deviceDescription: string
  backend: string
  threads: number
  /** The CPU backend keeps its threads between graphs (off for 1 thread, or with NEURON_NO_THREADPOOL=1). */
  threadPool: boolean
  flashAttention: boolean
  weightBytes: number
  /** Of weightBytes, those used in place from the mapped artifact files (0 with mmap off). */
  mappedBytes: number
  /**
   * Bytes of weight memory in 2 MB pages: of the mapped artifacts' spans (which hold every weight used in place, and
   * may hold others) and of the CPU buffers weights are read or repacked into (0 without transparent huge pages, or
   * with `hugePages` off).
   */
  hugePageBytes: number
  /** Weight bytes per ggml buffer type (CPU_REPACK: matmul weights repacked the way llama.cpp does). */
  weightBuffers: Record<string, number>
  kvBytesPerToken: number
  /** Values per token of a hidden state between blocks: n_embd, or deepseek4's hc x n_embd streams. */
  hiddenWidth: number
  /** deepseek4: its first blocks route experts by token id (0 for every other family). */
  hashLayers: number
}

export type NativeForwardResult = { data: Float32Array | Uint16Array; rows: number; cols: number; indices?: Int32Array }

/** What crosses the session's seams (native/src/seams.h): widths per token, token ids, int32 indices per token. */
export type NativeSeam = {
  inputWidth: number
  outputWidth: number
  needsTokenIds: boolean
  indicesIn: number
  indicesOut: number
}

export interface NativeSession {
  forward(
    input: Int32Array | Float32Array | Uint16Array,
    start: number,
    allOutputs: boolean,
    f16Output: boolean,
    side?: { tokenIds?: Int32Array; indices?: Int32Array },
  ): Promise<NativeForwardResult>
  truncate(nPast: number): void
  /** This fresh session takes `source`'s first `n` cached positions (same runtime and blocks, plain K and V only). */
  copyPrefix(source: NativeSession, n: number): void
  close(): void
  readonly nPast: number
  readonly kvBytes: number
  /** Cache bytes of each block the session runs (K and V, an MLA latent, or a sliding window's ring). */
  readonly kvBytesPerBlock: number[]
  readonly seam: NativeSeam
}

/** One session's step in a batch (runtime_batch.cpp); each settles on its own. */
export type NativeBatchItem = {
  session: NativeSession
  input: Int32Array | Float32Array | Uint16Array
  start: number
  allOutputs: boolean
  f16Output: boolean
  side?: { tokenIds?: Int32Array; indices?: Int32Array }
}
export type NativeBatchResult = (NativeForwardResult & { ok: true }) | { ok: false; error: unknown }

export interface NativeRuntime {
  info(): NativeInfo
  /**
   * The items' steps in one graph: a bad item fails alone; a
   * family that cannot batch fails every item (BATCH_UNSUPPORTED).
   */
  forwardBatch(items: NativeBatchItem[]): Promise<NativeBatchResult[]>
  /** from/to: the session's blocks, a sub-range of the runtime's (default: all of them). */
  openSession(maxTokens: number, from?: number, to?: number): NativeSession
  dispose(): void
}

type NativeModule = {
  initBackends(o: { dirs: string[]; libs: string[] }): { devices: string[]; problems: string[] }
  loadRuntime(o: {
    artifacts: string[]
    from: number
    to: number
    embed: boolean
    head: boolean
    threads: number
    device?: string
    flashAttention?: boolean
    mmap?: boolean
    hugePages?: boolean
  }): Promise<NativeRuntime>
  /** ggml_quantize_chunk over whole rows; throws BAD_QUANT_TYPE / BAD_QUANT_INPUT. */
  quantize(type: string, values: Float32Array, nPerRow: number): Buffer
}

const require = createRequire(import.meta.url)

function pkgDir(name: string): string | undefined {
  for (const base of require.resolve.paths(name) ?? []) {
    const dir = join(base, name)
    if (existsSync(join(dir, 'package.json'))) return dir
  }
  return undefined
}

/** Folders of node-llama-cpp's prebuilt ggml for this platform: the CPU build, then GPU builds. */
export function ggmlBinDirs(): { cpu: string[]; gpuLibs: string[] } {
  if (process.env.NEURON_GGML_BINS) return { cpu: [process.env.NEURON_GGML_BINS], gpuLibs: [] }
  const { platform, arch } = process
  const os = platform === 'darwin' ? 'mac' : platform
  const cpu: string[] = []
  const gpuLibs: string[] = []
  const base = platform === 'darwin' && arch === 'arm64' ? 'mac-arm64-metal' : `${os}-${arch}`
  const cpuPkg = pkgDir(`@node-llama-cpp/${base}`)
  if (cpuPkg) {
    const bins = join(cpuPkg, 'bins')
    for (const d of existsSync(bins) ? readdirSync(bins) : []) cpu.push(join(bins, d))
  }
  for (const gpu of ['cuda', 'vulkan']) {
    const dir = pkgDir(`@node-llama-cpp/${os}-${arch}-${gpu}`)
    if (!dir) continue
    const bins = join(dir, 'bins')
    for (const d of existsSync(bins) ? readdirSync(bins) : []) {
      const lib = join(bins, d, platform === 'win32' ? `ggml-${gpu}.dll` : `libggml-${gpu}.so`)
      if (existsSync(lib)) gpuLibs.push(lib)
    }
  }
  return { cpu, gpuLibs }
}

let native: NativeModule | undefined
/** Why GPU builds that are installed could not be used (missing driver / runtime), across calls. */
const backendProblems: string[] = []

/**
 * The addon, with ggml's backends registered: the best CPU variant always; node-llama-cpp's
 * CUDA / Vulkan builds (when installed) only once a caller may want a GPU.
 */
export function nativeModule(wantGpu: boolean): { native: NativeModule; devices: string[]; problems: string[] } {
  if (!native) {
    const path = join(PACKAGE_ROOT, 'native', 'build', 'Release', 'neuron_native.node')
    if (!existsSync(path)) {
      throw new ShardRuntimeError(
        'NATIVE_NOT_BUILT',
        `the native runtime is not built (${path}); run: node native/build.mjs`,
        {
          path,
        },
      )
    }
    native = require(path) as NativeModule
  }
  const { cpu, gpuLibs } = ggmlBinDirs()
  const libs = wantGpu ? gpuLibs : []
  try {
    const { devices, problems } = native.initBackends({ dirs: cpu, libs })
    backendProblems.push(...problems)
    return { native, devices, problems: backendProblems }
  } catch (err) {
    throw toShardRuntimeError(err)
  }
}
