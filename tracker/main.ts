// The tracker's entry point: `neuron tracker` calls runTracker; a hosted deployment can also run this
// file directly (`node --import tsx tracker/main.ts`), configured by NEURON_TRACKER_* variables.
import { fileURLToPath } from 'node:url'
import { NeuronError } from '../protocol'
import { Tracker, type TrackerOptions } from './server'

export const TRACKER_DEFAULTS = { port: 7070, host: '127.0.0.1', dbPath: 'tracker.sqlite', heartbeatMs: 5000 } as const

/** Resolves with the signal's name when the process is asked to stop (Ctrl-C or SIGTERM). */
export function untilSignal(): Promise<string> {
  return new Promise((done) => {
    for (const s of ['SIGINT', 'SIGTERM'] as const) process.once(s, () => done(s))
  })
}

/** Runs a tracker until SIGINT or SIGTERM, then closes it (the ledger is flushed by close). */
export async function runTracker(options: Partial<TrackerOptions>): Promise<void> {
  const stop = untilSignal()
  const tracker = await Tracker.start({ ...TRACKER_DEFAULTS, log: (l) => console.error(`[tracker] ${l}`), ...options })
  console.log(`tracker listening on ${tracker.url} (announce ${tracker.announceUrl})`)
  console.error(`[tracker] stopping on ${await stop}`)
  await tracker.close()
}

/** The options a hosted tracker reads from its environment. */
export function trackerOptionsFromEnv(env: NodeJS.ProcessEnv): Partial<TrackerOptions> {
  const int = (name: string): number | undefined => {
    const raw = env[name]
    if (raw === undefined || raw === '') return undefined
    const n = Number(raw)
    if (!Number.isSafeInteger(n) || n < 0)
      throw new NeuronError('bad_option', `${name} must be a whole number, not "${raw}".`)
    return n
  }
  const port = int('NEURON_TRACKER_PORT')
  const heartbeatMs = int('NEURON_TRACKER_HEARTBEAT_MS')
  return {
    ...(port === undefined ? {} : { port }),
    ...(env.NEURON_TRACKER_HOST ? { host: env.NEURON_TRACKER_HOST } : {}),
    ...(env.NEURON_TRACKER_DB ? { dbPath: env.NEURON_TRACKER_DB } : {}),
    ...(env.NEURON_TRACKER_KEY ? { keyPath: env.NEURON_TRACKER_KEY } : {}),
    ...(env.NEURON_TRACKER_REDIS ? { redisUrl: env.NEURON_TRACKER_REDIS } : {}),
    ...(heartbeatMs === undefined ? {} : { heartbeatMs }),
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await runTracker(trackerOptionsFromEnv(process.env))
