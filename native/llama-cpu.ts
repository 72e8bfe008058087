// Test helper: keeps node-llama-cpp 3.21.1 (the oracle) off ggml's AMX CPU build. On an Intel CPU
// with AMX, ggml picks bins/linux-x64/libggml-cpu-sapphirerapids.so, whose AMX buffer type cannot
// hold expert (MUL_MAT_ID) weights, and llama.cpp aborts on MoE and MLA graphs with
// `ggml-backend.cpp:1294: GGML_ASSERT(*cur_backend_id != -1) failed`. node-llama-cpp loads the
// best-scoring libggml-cpu-*.so from the bins directory that @node-llama-cpp/linux-x64 reports,
// so on such a CPU this points that package, for this process only, at a temp directory of
// symlinks to the same bins minus the AMX variant; ggml then picks the next best (zen4/icelake,
// AVX-512). Elsewhere it does nothing. Call it before the process's first getLlama().
import { createHash } from 'node:crypto'
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
} from 'node:fs'
import { register } from 'node:module'
import { tmpdir } from 'node:os'
import { join } from 'node:path'

const PLATFORM_PACKAGE = '@node-llama-cpp/linux-x64'
const AMX_VARIANT = 'libggml-cpu-sapphirerapids.so'

let done: Promise<void> | undefined

function cpuHasAmx(): boolean {
  try {
    return /\bamx_(int8|bf16|tile)\b/.test(readFileSync('/proc/cpuinfo', 'utf8'))
  } catch {
    return false
  }
}

async function redirect(): Promise<void> {
  if (process.platform !== 'linux' || process.arch !== 'x64' || !cpuHasAmx()) return
  const spec: string = PLATFORM_PACKAGE // a variable, so TypeScript does not look for its types
  const { getBinsDir } = (await import(spec)) as { getBinsDir(): { binsDir: string; packageVersion: string } }
  const { binsDir, packageVersion } = getBinsDir()
  const folders = readdirSync(binsDir).filter((f) => statSync(join(binsDir, f)).isDirectory())
  if (!folders.some((f) => existsSync(join(binsDir, f, AMX_VARIANT)))) return
  // One directory per bins directory, shared by processes (test workers exit without 'exit' hooks):
  // built aside and renamed into place, so a concurrent process sees it whole or not at all.
  const key = createHash('sha256').update(binsDir).digest('hex').slice(0, 12)
  const dir = join(tmpdir(), `neuron-llama-bins-no-amx-${packageVersion}-${key}`)
  if (!existsSync(dir)) {
    const staging = mkdtempSync(`${dir}.tmp-`)
    for (const folder of folders) {
      mkdirSync(join(staging, folder))
      for (const file of readdirSync(join(binsDir, folder)))
        if (file !== AMX_VARIANT) symlinkSync(join(binsDir, folder, file), join(staging, folder, file))
    }
    try {
      renameSync(staging, dir)
    } catch {
      rmSync(staging, { recursive: true, force: true }) // another process got there first
    }
  }
  const shimSource = `export function getBinsDir() { return ${JSON.stringify({ binsDir: dir, packageVersion })} }`
  const shim = `data:text/javascript,${encodeURIComponent(shimSource)}`
  const hooks = `
    export async function resolve(specifier, context, next) {
      if (specifier === ${JSON.stringify(PLATFORM_PACKAGE)}) return { url: ${JSON.stringify(shim)}, shortCircuit: true }
      return next(specifier, context)
    }`
  register(`data:text/javascript,${encodeURIComponent(hooks)}`)
}

/** Once per process: on an AMX CPU, node-llama-cpp loads a non-AMX ggml CPU backend. */
export function avoidAmxCpuBackend(): Promise<void> {
  done ??= redirect()
  return done
}
