// `neuron pull` as a person runs it, headless, from nothing to chatting: against a local HTTP server that answers as
// the Hugging Face Hub does (the real Hub cannot be reached on this machine), then a real tracker, publisher and host.
import { execFile } from 'node:child_process'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Token } from 'node-llama-cpp'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { readManifest } from '../host/publish'
import { oracleGreedy, oracleModel } from '../native/oracle'
import { HubTestServer } from '../test/hub-server'
import { REPO_ROOT, STORIES_260K, scratchDir } from '../test/models'
import { type NeuronProcess, startNeuron } from '../test/processes'

const TOKENS = 12

function neuron(env: NodeJS.ProcessEnv, ...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(REPO_ROOT, 'bin/neuron.js'), ...args],
      { cwd: REPO_ROOT, env: { ...process.env, ...env } },
      (error, stdout, stderr) => resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    )
  })
}

describe('neuron pull, headless, against a local Hub (the real one cannot be reached here)', () => {
  let dir = ''
  let cleanup = async () => {}
  let hub: HubTestServer
  const processes: NeuronProcess[] = []

  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-cli-pull-'))
    const model = await readFile(STORIES_260K)
    hub = await HubTestServer.start(
      [
        { id: 'karpathy/stories260K-GGUF', files: [{ path: 'stories260K-Q8_0.gguf', bytes: model }] },
        { id: 'meta-llama/gated-GGUF', gated: true, files: [{ path: 'm-Q8_0.gguf', bytes: model }] },
      ],
      { tokens: ['hf_ok'] },
    )
  })

  afterAll(async () => {
    await Promise.all(processes.map((p) => p.stop()))
    await hub?.close()
    await cleanup()
  })

  it('pulls through a cut connection, and the pack it prints is published, hosted and chatted with', async () => {
    const env = { HF_ENDPOINT: hub.endpoint, HF_HOME: join(dir, 'hf-home') }
    hub.troubleNext('stories260K-Q8_0.gguf', { cutAfter: 500_000 })
    const pulled = await neuron(env, 'pull', 'karpathy/stories260K-GGUF:Q8_0', '--data-dir', join(dir, 'data'))
    expect(pulled.code, pulled.stderr).toBe(0)
    expect(pulled.stdout).toMatch(/karpathy\/stories260K-GGUF: stories260K-Q8_0 \(Q8_0, 0\.00 GB\) at [0-9a-f]{12}/)
    expect(pulled.stdout).toMatch(/resuming at 500000 of \d+ bytes/)
    expect(pulled.stdout).toMatch(/stories260K-Q8_0\.gguf: 100\.0% of /)
    const packDir = /publish it: neuron publish (\S+) --tracker URL/.exec(pulled.stdout)?.[1] as string
    expect(packDir).toBe(join(dir, 'data', 'published', 'stories260k-q8_0'))

    const tracker = startNeuron([
      'tracker',
      '--port',
      '0',
      '--db',
      join(dir, 't.sqlite'),
      '--heartbeat-ms',
      '500',
      '--new-key-grant-micro',
      '10000000',
    ])
    processes.push(tracker)
    const trackerUrl = (await tracker.waitFor(/tracker listening on (http:\/\/127\.0\.0\.1:\d+)/))[1] as string
    const publisher = startNeuron(['publish', packDir, '--tracker', trackerUrl, '--data-dir', join(dir, 'data')])
    processes.push(publisher)
    await publisher.waitFor(/published stories260k-q8_0/)
    const host = startNeuron([
      ...['host', '--tracker', trackerUrl, '--model', 'stories260k-q8_0', '--blocks', '0:5'],
      ...['--data-dir', join(dir, 'host'), '--threads', '1'],
    ])
    processes.push(host)
    await host.waitFor(/ ready blocks \[0, 5\) ws:/, 90_000)
    const chat = await neuron(
      {},
      ...['chat', '--tracker', trackerUrl, '--model', 'stories260k-q8_0', '--max-tokens', String(TOKENS)],
      ...['--data-dir', join(dir, 'chat'), 'Once upon a time'],
    )
    expect(chat.code, chat.stderr).toBe(0)
    const oracle = await oracleModel(STORIES_260K)
    const prompt = [...oracle.tokenize('Once upon a time', true)]
    const expected = oracle.detokenize(
      (await oracleGreedy(oracle, prompt, TOKENS, (await readManifest(packDir)).nVocab)).map((s) => s.token as Token),
    )
    await oracle.dispose()
    expect(chat.stdout).toBe(`${expected}\n`)
  }, 240_000)

  it('a gated model without HF_TOKEN fails with one line that says to set it, exit code 1, nothing kept', async () => {
    const env = { HF_ENDPOINT: hub.endpoint, HF_HOME: join(dir, 'hf-home') }
    const r = await neuron(env, 'pull', 'meta-llama/gated-GGUF', '--data-dir', join(dir, 'gated'))
    expect(r.code).toBe(1)
    expect(r.stderr.trim()).toMatch(/^neuron pull: error \[hub_gated\]: meta-llama\/gated-GGUF is gated: set HF_TOKEN/)
    expect(r.stderr.trim().split('\n')).toHaveLength(1)
    expect(
      (await readdir(join(dir, 'gated'), { recursive: true }).catch(() => [])).filter((f) => /gguf/.test(f)),
    ).toEqual([])
    const ok = await neuron(
      { ...env, HF_TOKEN: 'hf_ok' },
      'pull',
      'meta-llama/gated-GGUF',
      '--data-dir',
      join(dir, 'gated'),
    )
    expect(ok.code, ok.stderr).toBe(0)
  })
})
