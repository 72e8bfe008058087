import { spawn } from 'node:child_process'
import { resolve } from 'node:path'
import { electronBinary } from '../electron/binary'
import { defaultDataDir } from '../host/host'
import { NeuronError } from '../protocol'
import { intOption, parseCommandArgs } from './args'
import { REPO_ROOT, runBrowserMode } from './browser-mode'
import type { Command } from './command'
import { whyNotOpen } from './open-browser'

export const appCommand: Command = {
  name: 'app',
  usage: `Usage: neuron app [--data-dir D] [--tracker URL] [--port N] [--threads N] [--headless] [--no-open]

Opens the Neuron app. By default it runs a private swarm in this process (a tracker on
127.0.0.1 with the tiny stories260K model published); --tracker joins another swarm instead.

  --headless   no Electron window: serve the UI at http://127.0.0.1:<port> for a browser
               (also what happens when Electron's binary is not installed), opened in the
               default browser; the link carries the key (kept in <data dir>/ui-key), without
               which the page and its API refuse. The address stays the same across starts
  --no-open    print the link, do not open a browser (also without a display, or when CI is set)
  --port N     the browser mode's port for this run (default: the one saved at the first start)
  --threads N  runtime threads for this run (default: the saved limit, else the physical cores)

Example: neuron app --headless --port 7071 --data-dir /tmp/neuron-app`,
  async run(args) {
    const { values } = parseCommandArgs(args, {
      'data-dir': { type: 'string' },
      tracker: { type: 'string' },
      port: { type: 'string' },
      headless: { type: 'boolean' },
      'no-open': { type: 'boolean' },
      threads: { type: 'string' },
    })
    const threads = intOption('threads', values.threads, { min: 1 })
    const dataDir = resolve(values['data-dir'] ?? defaultDataDir())
    const port = intOption('port', values.port)
    if (port !== undefined && port > 65535)
      throw new NeuronError('bad_option', `--port must be at most 65535, not ${port}.`)
    const electron = values.headless ? { missing: '--headless' } : electronBinary()
    if ('path' in electron) return runElectron(electron.path, dataDir, values.tracker)
    console.error(`[app] browser mode, the same UI in your browser: ${electron.missing}`)
    const notOpening = whyNotOpen(values['no-open'] === true)
    if (notOpening !== null) console.error(`[app] not opening a browser (${notOpening}): open the link it prints`)
    return runBrowserMode({
      dataDir,
      openBrowser: notOpening === null,
      ...(values.tracker === undefined ? {} : { trackerUrl: values.tracker }),
      ...(port === undefined ? {} : { port }),
      ...(threads === undefined ? {} : { threads }),
    })
  },
}

/** Electron on the repository (package.json "main"), with the options as arguments and environment. */
async function runElectron(binary: string, dataDir: string, trackerUrl: string | undefined): Promise<number> {
  const args = [REPO_ROOT, `--data-dir=${dataDir}`, ...(trackerUrl === undefined ? [] : [`--tracker=${trackerUrl}`])]
  const child = spawn(binary, args, {
    stdio: 'inherit',
    env: {
      ...process.env,
      NEURON_DATA_DIR: dataDir,
      ...(trackerUrl === undefined ? {} : { NEURON_TRACKER_URL: trackerUrl }),
    },
  })
  const forward = (signal: NodeJS.Signals) => child.kill(signal)
  process.on('SIGINT', forward)
  process.on('SIGTERM', forward)
  try {
    return await new Promise<number>((done, fail) => {
      child.once('error', fail)
      child.once('exit', (code, signal) => done(code ?? (signal === null ? 0 : 1)))
    })
  } finally {
    process.off('SIGINT', forward)
    process.off('SIGTERM', forward)
  }
}
