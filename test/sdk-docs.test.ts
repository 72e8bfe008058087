// docs/sdk.md's examples, run as written (TypeScript with tsx, Python with Debian's python3) against a real swarm on
// stories260K, two hosts splitting its blocks at 3: the examples a reader copies work and print what they promise.
import { execFile } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REPO_ROOT, STORIES_260K, scratchDir } from './models'
import { type InProcessSwarm, startGatewaySwarm } from './programs'
import { hasTorch, NO_TORCH, PYTHON, SEAM_TOLERANCE } from './reference'

const ADMIN = 'admin-token-for-sdk-docs'
const doc = readFileSync(join(REPO_ROOT, 'docs/sdk.md'), 'utf8')
const blocks = (lang: string) =>
  [...doc.matchAll(new RegExp(`\`\`\`${lang}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1] as string)
const scripts = blocks('ts')
const python = blocks('python')
const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8')
/** The README's curl example for POST /v1/hidden_states. */
const curlExample = /### Hidden states[\s\S]*?```sh\n([\s\S]*?)```/.exec(readme)?.[1] ?? ''
let swarm: InProcessSwarm
let env: NodeJS.ProcessEnv = {}
let cleanup: () => Promise<void> = async () => {}
const scratch = mkdtempSync(join(tmpdir(), 'neuron-sdk-docs-'))

/** Runs one example in a child process from the repository root; its stdout. */
async function run(file: string, command: string, args: string[] = []): Promise<string> {
  const { stdout } = await promisify(execFile)(command, [...args, file], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    timeout: 120_000,
  })
  return stdout
}

/**
 * A TypeScript example, its import of the SDK pointed at this checkout (the docs import it from the repository root).
 */
function tsExample(i: number): string {
  const file = join(scratch, `example-${i}.mts`)
  writeFileSync(file, (scripts[i] as string).replace("'./client/index.ts'", `'${join(REPO_ROOT, 'client/index.ts')}'`))
  return file
}

describe('docs/sdk.md examples on a real swarm of two hosts', () => {
  beforeAll(async () => {
    let dir: string
    ;({ dir, cleanup } = await scratchDir())
    let apiKey: string
    ;({ swarm, apiKey } = await startGatewaySwarm(dir, STORIES_260K, { adminToken: ADMIN }, 'docs'))
    env = {
      NEURON_TRACKER: swarm.tracker.url,
      NEURON_URL: swarm.tracker.url,
      NEURON_MODEL: swarm.manifest.modelId,
      NEURON_KEY: apiKey,
      NEURON_GGUF: STORIES_260K,
    }
  }, 180_000)
  afterAll(async () => {
    await swarm?.close()
    await cleanup()
    rmSync(scratch, { recursive: true, force: true })
  })

  it('has three TypeScript examples and one Python example', () => {
    expect(scripts).toHaveLength(3)
    expect(python).toHaveLength(1)
  })

  it('reads the state after block 1', async () => {
    const out = await run(tsExample(0), process.execPath, ['--import', 'tsx'])
    expect(out).toMatch(/^\d+ tokens \([\d,]+\) × 64 values after block 1$/m)
  })

  it('steers: a zero vector gives the same text, a large one changes the next token', async () => {
    const out = await run(tsExample(1), process.execPath, ['--import', 'tsx'])
    expect(out).toContain('(the same)')
    expect(out).toContain('(next token changed)')
  })

  it('runs a span equal to the full run within the reference tolerance', async () => {
    const out = await run(tsExample(2), process.execPath, ['--import', 'tsx'])
    const error = Number(/relative error (\S+)/.exec(out)?.[1])
    expect(error).toBeLessThan(SEAM_TOLERANCE)
  })

  it(
    'runs the README’s curl example: the state after block ' + '1, then a steered span on the state after block 0',
    async () => {
      const file = join(scratch, 'curl.sh')
      writeFileSync(
        file,
        curlExample
          .replaceAll('http://127.0.0.1:7070', swarm.tracker.url)
          .replaceAll('"model":"tiny"', `"model":"${swarm.manifest.modelId}"`),
      )
      const [read, span] = (await run(file, 'bash', ['-eo', 'pipefail']))
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line))
      expect(read).toMatchObject({ width: 64, route: [{ blocks: [0, 2] }], usage: { blocks: 2 } })
      expect(read.usage.charged_micro).toBeGreaterThan(0)
      expect(span).toMatchObject({ from_block: 1, after_block: 2, width: 64, usage: { blocks: 2 } })
    },
  )

  it.skipIf(!hasTorch)(`over HTTP from Python, equals reference/run.py within the tolerance${NO_TORCH}`, async () => {
    const file = join(scratch, 'example.py')
    writeFileSync(file, python[0] as string)
    const out = await run(file, PYTHON)
    console.log(out)
    expect(Number(/steering moved the state by (\S+)/.exec(out)?.[1])).toBeGreaterThan(0)
    expect(Number(/relative error vs reference\/run\.py: (\S+)/.exec(out)?.[1])).toBeLessThan(SEAM_TOLERANCE)
  })
})
