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
  const stun = tracker.stunPort === undefined ? '' : `, STUN on udp port ${tracker.stunPort}`
  console.log(`tracker listening on ${tracker.url} (announce ${tracker.announceUrl}${stun})`)
  console.error(`[tracker] stopping on ${await stop}`)
  await tracker.close()
}

/**
 * The STUN port of `neuron tracker` and of a hosted tracker: the one asked for, none for 'off', else the HTTP port's
 * number (UDP and TCP ports are apart, so both can be 7070), so a deployed tracker is a STUN server with nothing more
 * to set up; an HTTP port of 0 (a free one) gives a free UDP port too.
 */
export function stunPortOption(
  asked: number | 'off' | undefined,
  httpPort: number | undefined,
): { stunPort: number | null } {
  if (asked === 'off') return { stunPort: null }
  return { stunPort: asked ?? httpPort ?? TRACKER_DEFAULTS.port }
}

/** A STUN port as given on the command line or in the environment: a UDP port (0: a free one) or 'off'. */
export function parseStunPort(raw: string | undefined, name: string): number | 'off' | undefined {
  if (raw === undefined || raw === '') return undefined
  if (raw === 'off') return 'off'
  const n = Number(raw)
  if (!Number.isSafeInteger(n) || n < 0 || n > 65535)
    throw new NeuronError('bad_option', `${name} is a UDP port from 0 to 65535 (0: a free one) or off, not "${raw}".`)
  return n
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
    ...stunPortOption(parseStunPort(env.NEURON_TRACKER_STUN_PORT, 'NEURON_TRACKER_STUN_PORT'), port),
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await runTracker(trackerOptionsFromEnv(process.env))
