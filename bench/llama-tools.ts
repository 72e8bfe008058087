// llama.cpp's own tools, the baselines of bench:peers and bench:batch, built from the llama.cpp source node-llama-cpp
// bundles (the same commit whose ggml Neuron's runtime links): `ggml-rpc-server` (llama.cpp's RPC backend: one per
// machine holding layers), `llama-bench` (with `--rpc`, the RPC client: it holds the graph, sends every machine its
// part and times prompt and decode) and `llama-batched-bench` (llama.cpp's batched decode of n sequences). Built once
// into .bench/llama-tools (about 30 minutes on 2 cores), with no CPU backend of its own: ggml loads node-llama-cpp's
// prebuilt libggml-cpu-*.so variants, copied beside the binaries, so llama.cpp and Neuron run the same CPU kernels
// (a build with -march=native ran one sequence at 0.55× node-llama-cpp's speed on this VM: session 15's note).
import { spawn } from 'node:child_process'
import { copyFileSync, existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { REPO_ROOT } from '../test/models'
import { BENCH_DIR } from './models'

const DIR = join(BENCH_DIR, 'llama-tools')
const SOURCE = join(DIR, 'llama.cpp')
const BUILD = join(SOURCE, 'build')
/** Where the binaries, our ggml and the prebuilt CPU variants lie: LD_LIBRARY_PATH for both programs. */
export const LLAMA_TOOLS_BIN = join(BUILD, 'bin')
const BUNDLE = join(REPO_ROOT, 'node_modules/node-llama-cpp/llama/gitRelease.bundle')
/** The AMX variant cannot hold expert weights (native/llama-cpu.ts); left out on CPUs that have AMX, as there. */
const AMX_VARIANT = 'libggml-cpu-sapphirerapids.so'

export interface LlamaTools {
  readonly rpcServer: string
  readonly llamaBench: string
  readonly batchedBench: string
  /** The environment both need: their libraries' directory. */
  readonly env: NodeJS.ProcessEnv
}

function run(command: string, args: readonly string[], cwd: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'] })
    child.once('error', reject)
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${command} ${args.join(' ')} exited with ${code} (in ${cwd})`)),
    )
  })
}

/** node-llama-cpp's prebuilt CPU backend variants for this machine (the directory Neuron's runtime links). */
async function prebuiltCpuVariants(): Promise<string[]> {
  const spec: string = '@node-llama-cpp/linux-x64' // a variable, so TypeScript does not look for its types
  const { getBinsDir } = (await import(spec)) as { getBinsDir(): { binsDir: string } }
  const pkg = getBinsDir().binsDir
  const hasAmx = /\bamx_(int8|bf16|tile)\b/.test(readFileSync('/proc/cpuinfo', 'utf8'))
  const out: string[] = []
  for (const folder of readdirSync(pkg)) {
    const dir = join(pkg, folder)
    if (!statSync(dir).isDirectory()) continue
    for (const file of readdirSync(dir))
      if (file.startsWith('libggml-cpu-') && !(hasAmx && file === AMX_VARIANT)) out.push(join(dir, file))
  }
  if (out.length === 0) throw new Error(`no libggml-cpu-*.so under ${pkg}: is @node-llama-cpp/linux-x64 installed?`)
  return out
}

const TARGETS = ['ggml-rpc-server', 'llama-bench', 'llama-batched-bench']

/** Builds llama.cpp's tools where they are not built yet; resolves their paths. */
export async function llamaTools(log: (line: string) => void): Promise<LlamaTools> {
  if (process.platform !== 'linux' || process.arch !== 'x64')
    throw new Error(`llama.cpp's tools are built for linux-x64 only here, not ${process.platform}-${process.arch}`)
  const [rpcServer, llamaBench, batchedBench] = TARGETS.map((t) => join(LLAMA_TOOLS_BIN, t)) as [string, string, string]
  if (![rpcServer, llamaBench, batchedBench].every((b) => existsSync(b))) {
    if (!existsSync(BUNDLE)) throw new Error(`${BUNDLE} is missing: run npm ci (node-llama-cpp ships it)`)
    if (!existsSync(SOURCE)) {
      log(`cloning llama.cpp from ${BUNDLE}`)
      await run('git', ['clone', '-q', BUNDLE, SOURCE], REPO_ROOT)
    }
    log(`building ${TARGETS.join(', ')} (cmake, ninja; about 30 minutes on 2 cores, once)`)
    await run(
      'cmake',
      [
        ...['-S', '.', '-B', 'build', '-G', 'Ninja', '-DCMAKE_BUILD_TYPE=Release', '-DBUILD_SHARED_LIBS=ON'],
        // no CPU backend of its own: the prebuilt variants below are loaded, as node-llama-cpp loads them
        ...['-DGGML_BACKEND_DL=ON', '-DGGML_CPU=OFF', '-DGGML_RPC=ON', '-DGGML_NATIVE=OFF'],
        ...['-DLLAMA_CURL=OFF', '-DLLAMA_OPENSSL=OFF', '-DLLAMA_BUILD_TESTS=OFF'],
      ],
      SOURCE,
    )
    await run('cmake', ['--build', 'build', '-j2', '--target', ...TARGETS], SOURCE)
  }
  for (const lib of await prebuiltCpuVariants()) {
    const to = join(LLAMA_TOOLS_BIN, lib.slice(lib.lastIndexOf('/') + 1))
    if (!existsSync(to)) copyFileSync(lib, to)
  }
  return { rpcServer, llamaBench, batchedBench, env: { ...process.env, LD_LIBRARY_PATH: LLAMA_TOOLS_BIN } }
}

/** One test of `llama-bench -o jsonl`: a prompt (n_prompt) or a decode (n_gen) run, its mean tokens/s. */
export interface LlamaBenchRow {
  readonly n_prompt: number
  readonly n_gen: number
  readonly avg_ts: number
  readonly devices?: string
}

/** The rows of llama-bench's JSON-lines output; throws, naming the output, when there are none. */
export function llamaBenchRows(output: string): LlamaBenchRow[] {
  const rows = output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LlamaBenchRow)
  if (rows.length === 0) throw new Error(`llama-bench printed no result: ${output.slice(-2000)}`)
  return rows
}
