// `neuron chat` as a person runs it, against a real tracker, publisher and host on loopback: it ends its session
// at the tracker and waits for the acknowledgement before it exits, so it prints no complaint about session.end.
import { execFile, spawn } from 'node:child_process'
import { join } from 'node:path'
import type { Token } from 'node-llama-cpp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { packModel } from '../gguf/pack'
import { oracleGreedy, oracleModel } from '../native/oracle'
import type { Manifest } from '../protocol'
import { REPO_ROOT, STORIES_260K, scratchDir } from '../test/models'
import { type NeuronProcess, startNeuron } from '../test/processes'

const TOKENS = 16

function neuron(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(REPO_ROOT, 'bin/neuron.js'), ...args],
      { cwd: REPO_ROOT },
      (error, stdout, stderr) => {
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr })
      },
    )
  })
}

describe('neuron chat on a swarm of real processes', () => {
  let dir = ''
  let cleanup = async () => {}
  const processes: NeuronProcess[] = []
  let trackerUrl = ''
  let manifest: Manifest
  let expected = ''

  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-cli-chat-'))
    manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed'), blocksPerArtifact: 2 })
    const tracker = startNeuron([
      'tracker',
      '--port',
      '0',
      '--db',
      join(dir, 'tracker.sqlite'),
      '--heartbeat-ms',
      '500',
      '--new-key-grant-micro',
      '10000000',
    ])
    processes.push(tracker)
    trackerUrl = (await tracker.waitFor(/tracker listening on (http:\/\/127\.0\.0\.1:\d+)/))[1] as string
    const publisher = startNeuron([
      'publish',
      join(dir, 'packed'),
      '--tracker',
      trackerUrl,
      '--data-dir',
      join(dir, 'publisher'),
    ])
    processes.push(publisher)
    await publisher.waitFor(/published stories260k/)
    const host = startNeuron([
      'host',
      '--tracker',
      trackerUrl,
      '--model',
      manifest.modelId,
      '--blocks',
      '0:5',
      '--data-dir',
      join(dir, 'host'),
      '--threads',
      '1',
    ])
    processes.push(host)
    await host.waitFor(/ ready blocks \[0, 5\) ws:/, 90_000)
    // llama.cpp's greedy text for the same prompt and length.
    const model = await oracleModel(STORIES_260K)
    const prompt = [...model.tokenize('Once upon a time', true)]
    expected = model.detokenize(
      (await oracleGreedy(model, prompt, TOKENS, manifest.nVocab)).map((s) => s.token as Token),
    )
    await model.dispose()
  }, 180_000)

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop()))
    await cleanup()
  })

  it(
    'streams the greedy text, ends its session with the tracker’s acknowledgement and exits 0, printing no ' +
      'session.end complaint',
    async () => {
      const r = await neuron(
        'chat',
        '--tracker',
        trackerUrl,
        '--model',
        manifest.modelId,
        '--max-tokens',
        String(TOKENS),
        '--data-dir',
        join(dir, 'chat'),
        'Once upon a time',
      )
      expect(r.code, r.stderr).toBe(0)
      expect(r.stdout).toBe(`${expected}\n`)
      expect(expected).toMatch(/^, there was a little girl named Lily/)
      expect(r.stderr).toMatch(new RegExp(`${TOKENS} tokens \\(length\\)`))
      expect(r.stderr).not.toMatch(/session\.end/)
    },
  )

  it('--interactive: each line is the next turn, and a later turn’s prompt comes mostly from its cache', async () => {
    const child = spawn(
      process.execPath,
      [
        join(REPO_ROOT, 'bin/neuron.js'),
        'chat',
        '--tracker',
        trackerUrl,
        '--model',
        manifest.modelId,
        '--interactive',
        '--max-tokens',
        '8',
        '--data-dir',
        join(dir, 'chat-interactive'),
      ],
      { cwd: REPO_ROOT, stdio: ['pipe', 'pipe', 'pipe'] },
    )
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d) => {
      stdout += d
    })
    child.stderr.on('data', (d) => {
      stderr += d
    })
    child.stdin.write('Tell me a story.\n')
    child.stdin.write('And then?\n')
    child.stdin.end()
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    expect(code, stderr).toBe(0)
    expect(stdout.split('\n').filter((l) => l !== '')).toHaveLength(2)
    const cached = [...stderr.matchAll(/(\d+) of (\d+) prompt tokens cached/g)].map((m) => [Number(m[1]), Number(m[2])])
    expect(cached).toHaveLength(2)
    expect(cached[0]?.[0]).toBe(0)
    // the second turn sent only what came after the first turn's prompt and answer
    expect(cached[1]?.[0]).toBeGreaterThan(cached[0]?.[1] ?? 0)
    expect(cached[1]?.[0]).toBeLessThan(cached[1]?.[1] ?? 0)
  }, 60_000)
})
