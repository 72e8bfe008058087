// Two computers of one home as Linux network namespaces joined by a veth pair on 10.77.0.0/24, with
// multicast routed on that link so mDNS works between them. Needs root (CAP_NET_ADMIN) and iproute2.
import { execFileSync } from 'node:child_process'
import { chmod, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

export interface HomeComputer {
  /** The namespace's name, for `ip netns exec`. */
  readonly ns: string
  /** Its address on the home network. */
  readonly address: string
  /** Runs a command inside it: prefix for spawn. */
  readonly exec: readonly string[]
}

/** Why namespaces cannot be made here, or null when they can. */
export function whyNoNamespaces(): string | null {
  if (process.getuid?.() !== 0) return 'not root: network namespaces need CAP_NET_ADMIN'
  try {
    execFileSync('ip', ['netns', 'list'], { stdio: 'ignore' })
  } catch {
    return 'iproute2 (ip netns) is absent'
  }
  return null
}

function ip(...args: string[]): void {
  execFileSync('ip', args, { stdio: ['ignore', 'ignore', 'pipe'] })
}

/** Two namespaces `<prefix>a` and `<prefix>b` (prefix: a few letters, unique to this run), each with lo up. */
export function createHomeLan(prefix: string): { computers: [HomeComputer, HomeComputer]; destroy(): void } {
  const names = [`${prefix}a`, `${prefix}b`] as const
  const addresses = ['10.77.0.1', '10.77.0.2'] as const
  const destroy = () => {
    for (const ns of names) {
      try {
        ip('netns', 'del', ns)
      } catch {
        // Absent already: nothing to undo.
      }
    }
  }
  try {
    for (const ns of names) ip('netns', 'add', ns)
    ip(
      'link',
      'add',
      `${prefix}va`,
      'netns',
      names[0],
      'type',
      'veth',
      'peer',
      'name',
      `${prefix}vb`,
      'netns',
      names[1],
    )
    for (const [i, ns] of names.entries()) {
      const dev = `${prefix}v${i === 0 ? 'a' : 'b'}`
      ip('-n', ns, 'link', 'set', 'lo', 'up')
      ip('-n', ns, 'addr', 'add', `${addresses[i]}/24`, 'dev', dev)
      ip('-n', ns, 'link', 'set', dev, 'up')
      // mDNS sends to 224.0.0.251: without a route for it the send fails (ENETUNREACH).
      ip('-n', ns, 'route', 'add', '224.0.0.0/4', 'dev', dev)
    }
  } catch (error) {
    destroy()
    throw error
  }
  const computer = (i: 0 | 1): HomeComputer => ({
    ns: names[i],
    address: addresses[i],
    exec: ['ip', 'netns', 'exec', names[i]],
  })
  return { computers: [computer(0), computer(1)], destroy }
}

/** A script that runs Chromium inside `computer`, for playwright's executablePath: the UI listens on its loopback. */
export async function chromiumIn(computer: HomeComputer, dir: string, chromium: string): Promise<string> {
  const path = join(dir, `chromium-${computer.ns}.sh`)
  await writeFile(path, `#!/bin/sh\nexec ip netns exec ${computer.ns} ${chromium} "$@"\n`)
  await chmod(path, 0o755)
  return path
}
