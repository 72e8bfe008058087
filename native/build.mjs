#!/usr/bin/env node
// Builds the native runtime addon (native/build/Release/neuron_native.node).
//
// 1. finds the prebuilt ggml libraries node-llama-cpp ships for this platform;
// 2. extracts ggml's headers from the llama.cpp release node-llama-cpp bundles
//    (node_modules/node-llama-cpp/llama/gitRelease.bundle) into native/.build/include —
//    no llama.cpp code is committed;
// 3. runs node-gyp (configure once, then an incremental build).
//
// Idempotent and quick when nothing changed. `--force` rebuilds from scratch.
import { execFileSync } from 'node:child_process'
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const root = dirname(here)
const require = createRequire(join(root, 'package.json'))
const force = process.argv.includes('--force')
const log = (msg) => process.stderr.write(`[native] ${msg}\n`)

/** A package's folder, found the way Node would (some packages do not export package.json). */
function pkgDir(name) {
  for (const base of require.resolve.paths(name) ?? []) {
    const dir = join(base, name)
    if (existsSync(join(dir, 'package.json'))) return dir
  }
  throw new Error(`package ${name} is not installed (run npm ci)`)
}

/** node-llama-cpp's prebuilt binaries package for this platform (CPU build). */
function ggmlBinsDir() {
  const { platform, arch } = process
  const pkg = platform === 'darwin' ? (arch === 'arm64' ? 'mac-arm64-metal' : 'mac-x64') : `${platform}-${arch}`
  const dir = join(
    pkgDir(`@node-llama-cpp/${pkg}`),
    'bins',
    `${platform === 'darwin' ? 'mac' : platform}-${arch}${pkg.endsWith('-metal') ? '-metal' : ''}`,
  )
  if (!existsSync(dir)) throw new Error(`ggml binaries not found at ${dir}; is @node-llama-cpp/${pkg} installed?`)
  return dir
}

function findLib(dir, re) {
  const name = readdirSync(dir).find((f) => re.test(f))
  if (!name) throw new Error(`no file matching ${re} in ${dir}`)
  return name
}

/** Headers from the llama.cpp release node-llama-cpp was built from. */
function extractHeaders(buildDir) {
  const includeDir = join(buildDir, 'include')
  const bundle = join(pkgDir('node-llama-cpp'), 'llama', 'gitRelease.bundle')
  const info = readFileSync(join(dirname(bundle), 'llama.cpp.info.json'), 'utf8')
  const stamp = join(includeDir, '.release')
  if (!force && existsSync(stamp) && readFileSync(stamp, 'utf8') === info) return includeDir
  const clone = join(buildDir, 'llama.cpp')
  if (force || !existsSync(join(clone, 'ggml', 'include', 'ggml.h'))) {
    rmSync(clone, { recursive: true, force: true })
    log(`cloning ${relative(root, bundle)}`)
    execFileSync('git', ['clone', '--quiet', '--no-checkout', bundle, clone], { stdio: 'inherit' })
    // The bundle has a single commit; check out only the ggml headers we compile against.
    execFileSync(
      'git',
      ['-C', clone, '-c', 'advice.detachedHead=false', 'checkout', '--quiet', 'HEAD', '--', 'ggml/include'],
      {
        stdio: 'inherit',
      },
    )
  }
  rmSync(includeDir, { recursive: true, force: true })
  mkdirSync(includeDir, { recursive: true })
  for (const f of readdirSync(join(clone, 'ggml', 'include'))) {
    if (f.endsWith('.h')) copyFileSync(join(clone, 'ggml', 'include', f), join(includeDir, f))
  }
  writeFileSync(stamp, info)
  return includeDir
}

function nodeGyp() {
  if (process.env.npm_config_node_gyp && existsSync(process.env.npm_config_node_gyp))
    return process.env.npm_config_node_gyp
  const candidates = [
    join(
      dirname(process.execPath),
      '..',
      'lib',
      'node_modules',
      'npm',
      'node_modules',
      'node-gyp',
      'bin',
      'node-gyp.js',
    ),
    join(dirname(process.execPath), 'node_modules', 'npm', 'node_modules', 'node-gyp', 'bin', 'node-gyp.js'),
  ]
  try {
    candidates.unshift(require.resolve('node-gyp/bin/node-gyp.js'))
  } catch {}
  const found = candidates.find((c) => existsSync(c))
  if (!found) throw new Error('node-gyp not found (it ships with npm); set npm_config_node_gyp')
  return found
}

/** Local Node headers when present (no download needed, e.g. offline machines). */
function nodeDirArgs() {
  const prefix = dirname(dirname(process.execPath))
  return existsSync(join(prefix, 'include', 'node', 'node_api.h')) ? [`--nodedir=${prefix}`] : []
}

const buildDir = join(here, '.build')
mkdirSync(buildDir, { recursive: true })
const bins = ggmlBinsDir()
const includeDir = extractHeaders(buildDir)
const libBase = findLib(bins, /^libggml-base\.(so|dylib)$/)
const libGgml = findLib(bins, /^libggml(\.v[\d.]+)?\.(so|dylib)$/)
const gypVars = [
  `-Dggml_bins=${bins}`,
  `-Dggml_include=${includeDir}`,
  `-Dggml_lib_base=${libBase}`,
  `-Dggml_lib=${libGgml}`,
  `-Dggml_bins_rel=${relative(join(here, 'build', 'Release'), bins)}`,
]
const gyp = nodeGyp()
const configStamp = join(here, 'build', '.neuron-config')
const config = JSON.stringify(gypVars)
const run = (args) =>
  execFileSync(process.execPath, [gyp, ...args], { cwd: here, stdio: ['ignore', 'inherit', 'inherit'] })
if (force || !existsSync(configStamp) || readFileSync(configStamp, 'utf8') !== config) {
  log('configuring')
  run(['configure', ...nodeDirArgs(), '--', ...gypVars])
  writeFileSync(configStamp, config)
}
run(['build', `--jobs=${Math.max(1, Math.min(4, (await import('node:os')).availableParallelism()))}`])
log(`built ${relative(root, join(here, 'build', 'Release', 'neuron_native.node'))} against ${relative(root, bins)}`)
