// bench:load's swarm: a `neuron tracker` process, the model packed and published from this process, and `neuron host`
// processes serving consecutive block ranges (so every route has one hop per host), each a real program on loopback.
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { packModel } from '../gguf/pack'
import { publishModel } from '../host/publish'
import { NodeIdentity } from '../identity/keys'
import { type Manifest, splitBlocks } from '../protocol'
import { type NeuronProcess, startNeuron } from '../test/processes'
import { startSeededHost } from './seeded-host'

export interface LoadSwarm {
  readonly trackerUrl: string
  readonly manifest: Manifest
  readonly ranges: readonly (readonly [number, number])[]
  /** Every process's output so far, for a report when something fails. */
  logs(): string
  /** CPU seconds (user + system) each process has used so far, from /proc; empty where there is none. */
  cpuSeconds(): { tracker: number; hosts: number[] } | undefined
  close(): Promise<void>
}

export interface LoadSwarmOptions {
  readonly work: string
  readonly model: string
  readonly hosts: number
  readonly threads: number
  /** Sessions each host runs at once (`neuron host --max-sessions`). */
  readonly maxSessions: number
  /** Client keys that will ask for routes: each is a new account, within the tracker's new accounts per minute. */
  readonly clients: number
  /**
   * `neuron tracker --audit-rate` (default the tracker's); hosts
   * on probation are audited at half their steps either way.
   */
  readonly auditRate?: string
}

export async function startLoadSwarm(o: LoadSwarmOptions): Promise<LoadSwarm> {
  const processes: NeuronProcess[] = []
  let publication: { close(): Promise<void> } | undefined
  const close = async () => {
    await Promise.all(processes.map((p) => p.stop()))
    await publication?.close()
  }
  try {
    const db = join(o.work, 'tracker.sqlite')
    const tracker = startNeuron([
      'tracker',
      '--port',
      '0',
      '--db',
      db,
      '--new-key-grant-micro',
      '1000000000',
      '--new-accounts-per-minute',
      String(o.clients + 8),
      // the load's clients are not farming: no proof of work, no per-prefix bound
      '--grant-work-bits',
      '0',
      '--grants-per-prefix-per-day',
      '1000000',
      ...(o.auditRate === undefined ? [] : ['--audit-rate', o.auditRate]),
    ])
    processes.push(tracker)
    const trackerUrl = (await tracker.waitFor(/tracker listening on (http:\/\/127\.0\.0\.1:\d+)/, 60_000))[1] as string
    const packed = join(o.work, 'packed')
    const manifest = await packModel({ source: o.model, out: packed, blocksPerArtifact: 1 })
    publication = await publishModel(packed, trackerUrl, NodeIdentity.generate(), join(o.work, 'publisher'))
    const ranges = splitBlocks(manifest.nLayer, o.hosts)
    for (const [i, [a, b]] of ranges.entries()) {
      const host = await startSeededHost({
        trackerUrl,
        manifest,
        packed,
        dataDir: join(o.work, `host-${i}`),
        blocks: [a, b],
        threads: o.threads,
        args: ['--max-sessions', String(o.maxSessions)],
      })
      processes.push(host)
    }
    await Promise.all(processes.slice(1).map((h) => h.waitFor(/ ready blocks/, 300_000)))
    return {
      trackerUrl,
      manifest,
      ranges,
      cpuSeconds: () => {
        const used = processes.map((p) => cpuSecondsOf(p.child.pid))
        if (used.some((s) => s === undefined)) return undefined
        return { tracker: used[0] as number, hosts: used.slice(1) as number[] }
      },
      logs: () =>
        processes.map((p, i) => `--- ${i === 0 ? 'tracker' : `host ${i - 1}`}\n${p.output().slice(-4000)}`).join('\n'),
      close,
    }
  } catch (error) {
    await close()
    throw error
  }
}

let ticksPerSecond: number | undefined

/** utime + stime of a Linux process, seconds (fields 14 and 15 of /proc/PID/stat, after the command's parentheses). */
function cpuSecondsOf(pid: number | undefined): number | undefined {
  const stat = `/proc/${pid}/stat`
  if (pid === undefined || !existsSync(stat)) return undefined
  ticksPerSecond ??= Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100
  const fields = readFileSync(stat, 'utf8').split(') ')[1]?.split(' ') ?? []
  return (Number(fields[11]) + Number(fields[12])) / ticksPerSecond
}
