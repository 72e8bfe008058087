// The package as a user gets it without the repository: `npm pack`, then `npm install -g` of the tarball into a
// temporary prefix (packages from the npm registry, install scripts allowed by name as npm 11 asks), then the installed
// `neuron`: its help, and a whole demo swarm (tracker, publisher, hosts and a streamed completion) on loopback.
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REPO_ROOT, scratchDir } from './models'

const run = promisify(execFile)
/**
 * The packages whose install scripts build something for this machine: SQLite, llama.cpp's loader, esbuild, and ours.
 */
const ALLOW_SCRIPTS = 'better-sqlite3,node-llama-cpp,esbuild,neuron'

let dir: { dir: string; cleanup: () => Promise<void> }
let neuron = ''

beforeAll(async () => {
  if (!existsSync(join(REPO_ROOT, 'dist', 'cli', 'main.mjs')))
    throw new Error(
      'dist/cli/main.mjs is missing: the package ships the compiled CLI; run npm run build first (npm ci does)',
    )
  dir = await scratchDir('neuron-npm-install-')
  const { stdout } = await run('npm', ['pack', '--ignore-scripts', '--silent', '--pack-destination', dir.dir], {
    cwd: REPO_ROOT,
    maxBuffer: 1 << 24,
  })
  const tarball = join(dir.dir, stdout.trim().split('\n').at(-1) ?? '')
  const prefix = join(dir.dir, 'prefix')
  await run(
    'npm',
    ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', `--allow-scripts=${ALLOW_SCRIPTS}`, tarball],
    {
      cwd: dir.dir,
      maxBuffer: 1 << 26,
    },
  )
  neuron = join(prefix, 'bin', 'neuron')
}, 1_200_000)

afterAll(async () => {
  await dir?.cleanup()
})

describe('npm install -g of the packed tarball, in a temporary prefix', () => {
  it('installs a neuron command that answers --help from the compiled CLI', async () => {
    const started = performance.now()
    const { stdout } = await run(neuron, ['--help'], { cwd: dir.dir })
    console.log(
      `installed neuron --help: ${(performance.now() - started).toFixed(0)} ms wall (one run; bench figures in the ` +
        `closing note)`,
    )
    expect(stdout).toMatch(/^neuron — run very large GGUF models together on home computers/)
    expect(stdout).toMatch(/\n {2}demo +a whole swarm on this machine/)
  })

  it('runs neuron demo to the end: the shipped model, the native runtime built at install, a swarm on ' +
    'loopback', async () => {
    const { stdout, stderr } = await run(neuron, ['demo', '--max-tokens', '12'], {
      cwd: dir.dir,
      timeout: 600_000,
      maxBuffer: 1 << 24,
    })
    expect(`${stdout}${stderr}`).toMatch(/\d+ tokens at [\d.]+ tokens\/s through \d hops/)
  }, 600_000)
})
