import { runTracker, TRACKER_DEFAULTS } from '../tracker/main'
import { intOption, parseCommandArgs } from './args'
import type { Command } from './command'

export const trackerCommand: Command = {
  name: 'tracker',
  summary: 'run a tracker: registry, placement, routing, relay and a BitTorrent tracker on one port',
  usage: `Usage: neuron tracker [--port ${TRACKER_DEFAULTS.port}] [--host ${TRACKER_DEFAULTS.host}] [--db ${TRACKER_DEFAULTS.dbPath}] [--heartbeat-ms ${TRACKER_DEFAULTS.heartbeatMs}]

Example: neuron tracker --port 7070 --db /tmp/neuron-tracker.sqlite`,
  async run(args) {
    const { values } = parseCommandArgs(args, {
      port: { type: 'string' },
      host: { type: 'string' },
      db: { type: 'string' },
      'heartbeat-ms': { type: 'string' },
    })
    const port = intOption('port', values.port)
    const heartbeatMs = intOption('heartbeat-ms', values['heartbeat-ms'], { min: 50 })
    await runTracker({
      ...(port === undefined ? {} : { port }),
      ...(values.host === undefined ? {} : { host: values.host }),
      ...(values.db === undefined ? {} : { dbPath: values.db }),
      ...(heartbeatMs === undefined ? {} : { heartbeatMs }),
    })
    return 0
  },
}
