// Typed errors end a `neuron` command with one line, `neuron <command>: error [code]: message`, never a stack trace.
import { execFile } from 'node:child_process'
import { open, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ShardRuntimeError } from '../native/errors'
import { NeuronError } from '../protocol'
import { REPO_ROOT, STORIES_260K, scratchDir } from '../test/models'
import { startNeuron } from '../test/processes'
import { typedErrorLine } from './errors'

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

/** No frame of a Node stack trace (`    at f (file:1:2)`) and no Node version footer. */
const STACK = /^\s+at |Node\.js v\d/m

describe('typed errors on one line', () => {
  it('names the command, the code and the message of every typed error, and nothing of an untyped one', () => {
    expect(typedErrorLine('host', new NeuronError('no_room', 'the disk is full;\n  free 2 GB'))).toBe(
      'neuron host: error [no_room]: the disk is full; free 2 GB',
    )
    expect(
      typedErrorLine('publish', new ShardRuntimeError('UNSUPPORTED_ARCH', "architecture 'x' is not supported")),
    ).toBe("neuron publish: error [UNSUPPORTED_ARCH]: architecture 'x' is not supported")
    const enoent = Object.assign(new Error("ENOENT: no such file or directory, open '/x'"), {
      code: 'ENOENT',
      syscall: 'open',
    })
    expect(typedErrorLine('pack', enoent)).toBe(
      "neuron pack: error [ENOENT]: ENOENT: no such file or directory, open '/x'",
    )
    expect(typedErrorLine('pack', new TypeError('x is undefined'))).toBeUndefined()
  })
})

describe('neuron publish of a model the runtime refuses', () => {
  let dir = ''
  let cleanup = async () => {}
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-cli-errors-'))
  })
  afterAll(() => cleanup())

  it('prints the runtime’s error in one line and exits 1', async () => {
    const packed = join(dir, 'packed')
    expect((await neuron('pack', STORIES_260K, '--out', packed, '--blocks-per-artifact', '2')).code).toBe(0)
    expect(await readdir(packed)).toContain('blocks-0-2.gguf')
    // A block artifact of an architecture the runtime has no graph for (same length, so the GGUF still reads).
    const file = await open(join(packed, 'blocks-0-2.gguf'), 'r+')
    const head = Buffer.alloc(64 * 1024)
    await file.read(head, 0, head.length, 0)
    const at = head.indexOf('llama', head.indexOf('general.architecture'))
    await file.write(Buffer.from('llamb'), 0, 5, at)
    await file.close()
    // The probes run before the tracker is called: its address is never reached.
    const r = await neuron('publish', packed, '--tracker', 'http://127.0.0.1:9', '--data-dir', join(dir, 'data'))
    expect(r.code).toBe(1)
    expect(r.stderr).not.toMatch(STACK)
    expect(r.stderr.trim().split('\n'), r.stderr).toEqual([
      "neuron publish: error [UNSUPPORTED_ARCH]: architecture 'llamb' is not supported; supported: llama, qwen2, " +
        'qwen3, qwen3moe, deepseek2, gpt-oss, qwen35moe, glm-dsa, deepseek4',
    ])
  })

  it('prints a NeuronError in one line with its code', async () => {
    const r = await neuron(
      'publish',
      join(dir, 'nowhere'),
      '--tracker',
      'http://127.0.0.1:9',
      '--data-dir',
      join(dir, 'data'),
    )
    expect(r.code).toBe(1)
    expect(r.stderr.trim().split('\n'), r.stderr).toHaveLength(1)
    expect(r.stderr).toMatch(
      /^neuron publish: error \[bad_manifest\]: .*nowhere\/manifest\.json is missing or not JSON/,
    )
  })

  it('prints a bad option value in a line, then the usage, not a stack trace', async () => {
    const r = await neuron('pack', STORIES_260K, '--blocks-per-artifact')
    expect(r.code).toBe(2)
    expect(r.stderr).not.toMatch(STACK)
    expect(r.stderr).toMatch(
      /^neuron pack: Option '--blocks-per-artifact <value>' argument missing\n\nUsage: neuron pack/,
    )
  })
})

describe('neuron host given a chunk bound it cannot batch', () => {
  it('says which bounds are allowed before it joins anything', async () => {
    const r = await neuron('host', '--tracker', 'http://127.0.0.1:9', '--prefill-chunk', '65', '--threads', '1')
    expect(r.code).not.toBe(0)
    expect(r.stderr).not.toMatch(STACK)
    expect(r.stderr).toMatch(/--prefill-chunk must be a whole number from 0 to 64, not "65"/)
  })
})

describe('neuron host refused by a real tracker', () => {
  it('prints the refusal in one line and exits 1, though it had joined the tracker', async () => {
    const { dir, cleanup } = await scratchDir('neuron-cli-host-')
    const tracker = startNeuron(['tracker', '--port', '0', '--db', join(dir, 'tracker.sqlite')])
    try {
      const url = (await tracker.waitFor(/tracker listening on (http:\/\/127\.0\.0\.1:\d+)/))[1] as string
      // It used to print the line and then run on, holding its tracker connection, until killed.
      const r = await neuron(
        'host',
        '--tracker',
        url,
        '--model',
        'nothing-here',
        '--blocks',
        '0:1',
        '--data-dir',
        join(dir, 'host'),
        '--threads',
        '1',
      )
      expect(r.code).toBe(1)
      expect(r.stderr).not.toMatch(STACK)
      expect(r.stderr).toMatch(/^neuron host: error \[unknown_model\]: no model nothing-here in this swarm/m)
    } finally {
      await tracker.stop()
      await cleanup()
    }
  })
})
