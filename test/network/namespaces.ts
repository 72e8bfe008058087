// Network namespaces, veth pairs and commands run inside them: the `ip` plumbing under the network.
import { execFile, execFileSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { promisify } from 'node:util'

const execFileAsync = promisify(execFile)

/** Runs a program; resolves its stdout, or rejects with the command line and its stderr. */
export async function run(argv: readonly string[]): Promise<string> {
  const [command, ...args] = argv
  if (command === undefined) throw new Error('run() needs a program to run')
  try {
    const { stdout } = await execFileAsync(command, args, { maxBuffer: 16 * 1024 * 1024 })
    return stdout
  } catch (err) {
    const e = err as { stderr?: string; message: string }
    throw new Error(`\`${argv.join(' ')}\` failed: ${e.stderr?.trim() || e.message}`)
  }
}

/** Runs `argv` inside the namespace called `netns`. */
export function runIn(netns: string, argv: readonly string[]): Promise<string> {
  return run(['ip', 'netns', 'exec', netns, ...argv])
}

export async function createNamespace(netns: string): Promise<void> {
  await run(['ip', 'netns', 'add', netns])
  await run(['ip', '-n', netns, 'link', 'set', 'lo', 'up'])
  // no duplicate address detection on the interfaces made here (link-local ones included): until it ends (a second
  // or two, more on a loaded machine) an address is tentative, neighbour discovery waits, and the first v6 packets of
  // a test went unanswered (the fresh-clone CI saw a v6 connect time out right after the network was built)
  await runIn(netns, [
    'sysctl',
    '-qw',
    'net.ipv6.conf.all.accept_dad=0',
    'net.ipv6.conf.default.accept_dad=0',
    'net.ipv6.conf.default.dad_transmits=0',
  ])
  // br_netfilter would otherwise run bridged frames (LAN to LAN) through the routers' forward chains.
  if (existsSync('/proc/sys/net/bridge'))
    await runIn(netns, [
      'sysctl',
      '-qw',
      'net.bridge.bridge-nf-call-iptables=0',
      'net.bridge.bridge-nf-call-ip6tables=0',
    ])
}

/** A veth pair made directly inside the two namespaces: nothing ever appears in the machine's own namespace. */
export async function connectNamespaces(a: string, ifA: string, b: string, ifB: string): Promise<void> {
  await run(['ip', '-n', a, 'link', 'add', ifA, 'type', 'veth', 'peer', 'name', ifB, 'netns', b])
}

/** Kills whatever still runs inside the namespace (only processes this harness started), then deletes it. */
export async function deleteNamespace(netns: string): Promise<void> {
  const pids = await run(['ip', 'netns', 'pids', netns]).catch(() => '')
  for (const pid of pids.split('\n').filter((p) => p !== '')) {
    try {
      process.kill(Number(pid), 'SIGKILL')
    } catch {
      // already gone
    }
  }
  await run(['ip', 'netns', 'delete', netns]).catch(() => undefined)
}

export async function listNamespaces(): Promise<string[]> {
  const out = await run(['ip', 'netns', 'list'])
  return out
    .split('\n')
    .map((line) => line.split(' ')[0] ?? '')
    .filter((name) => name !== '')
}

// Every namespace of a run is named `nrn<pid><letter>-<place>`, so a later run can tell which are orphans.
const OURS = /^nrn(\d+)[a-z]+-/
let runs = 0

/** A short prefix unique to this process and build: `nrn4242a`. */
export function newRunPrefix(): string {
  let n = runs++
  let letters = ''
  do {
    letters = String.fromCharCode(97 + (n % 26)) + letters
    n = Math.floor(n / 26) - 1
  } while (n >= 0)
  return `nrn${process.pid}${letters}`
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** Deletes namespaces left by runs whose process is gone (a crashed test); returns their names. */
export async function removeStaleNamespaces(): Promise<string[]> {
  const stale = (await listNamespaces()).filter((name) => {
    const pid = OURS.exec(name)?.[1]
    return pid !== undefined && Number(pid) !== process.pid && !alive(Number(pid))
  })
  for (const name of stale) await deleteNamespace(name)
  return stale
}

/** Why namespace networks cannot be built here, or undefined when they can. */
export function whyNoNamespaces(): string | undefined {
  if (process.platform !== 'linux') return 'not Linux'
  if (process.getuid?.() !== 0) return 'not root'
  const probe = (argv: string[]) => {
    try {
      execFileSync(argv[0] ?? '', argv.slice(1), { stdio: 'ignore' })
      return true
    } catch {
      return false
    }
  }
  if (!probe(['ip', '-V'])) return 'no ip (iproute2)'
  if (!probe(['nft', '--version'])) return 'no nft (nftables)'
  if (!probe(['/usr/bin/python3', '-c', 'import ctypes'])) return 'no /usr/bin/python3 for the link shaper'
  if (!existsSync('/dev/net/tun')) return 'no /dev/net/tun for the link shaper'
  const name = `${newRunPrefix()}-probe`
  if (!probe(['ip', 'netns', 'add', name])) return 'cannot create network namespaces'
  probe(['ip', 'netns', 'delete', name])
  return undefined
}

/** Why a UPnP/NAT-PMP router cannot be built here, or undefined when it can. */
export function whyNoMiniupnpd(): string | undefined {
  return existsSync(MINIUPNPD) ? undefined : `no ${MINIUPNPD} (Debian's miniupnpd-nftables)`
}

export const MINIUPNPD = '/usr/sbin/miniupnpd'
