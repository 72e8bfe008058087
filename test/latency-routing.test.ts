// Measured latencies steer routes, with a real slow link: a swarm on 127.0.0.1 inside a network namespace this
// test makes (unshare -n), one host's link slowed by 80 ms each way. The kernel's tc netem does it where the
// kernel has netem; otherwise a userspace proxy in front of the host's port (the host advertises the proxy).
// Asserted: the route each session took, never a time.
import { execFileSync, spawnSync } from 'node:child_process'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { REPO_ROOT, STORIES_260K, scratchDir } from './models'

/** How this machine can slow one loopback port: netem in a namespace, the proxy in a namespace, or not at all. */
function delayMethod(): { run: boolean; name: string } {
  const probe = spawnSync(
    'unshare',
    ['-n', 'sh', '-c', 'ip link set lo up && tc qdisc add dev lo root netem delay 1ms'],
    { encoding: 'utf8' },
  )
  if (probe.error !== undefined || /unshare:/.test(probe.stderr)) {
    return {
      run: false,
      name:
        `skipped: cannot make a network namespace here (${(probe.stderr || String(probe.error)).trim()}); run ` +
        `as root`,
    }
  }
  if (probe.status === 0) return { run: true, name: 'tc netem delays the host’s port (the kernel has netem)' }
  return {
    run: true,
    name: `a delay proxy slows the host (no tc netem in this kernel: ${probe.stderr.trim().split('\n')[0]})`,
  }
}

const method = delayMethod()
let dir = ''
let cleanup: () => Promise<void> = async () => {}

describe.skipIf(!method.run)(`routing by measured latency in a network namespace`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir())
  })
  afterAll(() => cleanup())

  it(`routes around a host once its slow link is measured, and back to it once the link is fast again; ` +
    `${method.name}`, () => {
    const child = join(REPO_ROOT, 'test/latency-swarm-child.ts')
    const script = `ip link set lo up && exec "${process.execPath}" --import tsx "${child}" "${dir}" "${STORIES_260K}"`
    const out = execFileSync('unshare', ['-n', 'sh', '-c', script], {
      cwd: REPO_ROOT,
      encoding: 'utf8',
      timeout: 240_000,
      maxBuffer: 16 << 20,
    })
    const result = JSON.parse(out.trim().split('\n').at(-1) as string) as {
      mode: 'netem' | 'proxy'
      slowHost: string
      otherHost: string
      whileSlow: string[]
      recovered: string[]
    }
    expect(result.mode).toBe(method.name.startsWith('tc netem') ? 'netem' : 'proxy')
    // The first session may go to the slowed host (nothing is measured yet: it was the planner's pick); that session
    // measures both hosts (its hop's pings, and the other host the tracker named), and every session after avoids it.
    expect(result.whileSlow.length).toBeGreaterThanOrEqual(3)
    expect(result.whileSlow.slice(1)).toEqual(result.whileSlow.slice(1).map(() => result.otherHost))
    // The delay moves to the other host: routes come back to the first one, measured fast again.
    expect(result.recovered.slice(-3)).toEqual([result.slowHost, result.slowHost, result.slowHost])
  }, 300_000)
})
