// A tracker in a process of its own for the benches, as deployed (another machine): its metering of every step's
// receipts, its ledger and its Socket.IO sends stay off the client's event loop. `startTrackerProcess(options)` runs
// this file with the options as JSON; it prints the URL and serves until SIGTERM.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { type NeuronProcess, watchProcess } from '../test/processes'
import { Tracker, type TrackerOptions } from '../tracker/server'

/** Options that survive JSON (no factories or callbacks). */
export type TrackerProcessOptions = Omit<TrackerOptions, 'ownReruns' | 'log'>

export interface TrackerProcess {
  readonly url: string
  readonly process: NeuronProcess
  close(): Promise<void>
}

export async function startTrackerProcess(options: TrackerProcessOptions): Promise<TrackerProcess> {
  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), JSON.stringify(options)], {
    env: process.env,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const watched = watchProcess(child, 'bench tracker')
  try {
    const url = (await watched.waitFor(/bench tracker listening on (http:\/\/\S+)/, 60_000))[1] as string
    return { url, process: watched, close: () => watched.stop() }
  } catch (error) {
    await watched.stop()
    throw error
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const tracker = await Tracker.start(JSON.parse(process.argv[2] ?? '{}') as TrackerProcessOptions)
  console.log(`bench tracker listening on ${tracker.url}`)
  // a bench that crashed leaves no tracker behind: orphaned, this process ends
  const parent = process.ppid
  setInterval(() => {
    if (process.ppid !== parent) void tracker.close().then(() => process.exit(0))
  }, 1000).unref()
  process.once('SIGTERM', () => {
    void tracker.close().then(() => process.exit(0))
  })
}
