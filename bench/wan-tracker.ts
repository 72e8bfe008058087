// The tracker bench:wan runs in the cloud namespace without `--audits`: `neuron tracker` with its checks kept out of
// the data plane (hosts start past probation, no audits, no periodic known-answer probes), so a chat's tokens wait
// on nothing but the route. A probe or an audit re-runs a host's steps; on 2 busy cores that stalled a chat ~1 s.
// Usage: node --import tsx bench/wan-tracker.ts PORT DB
import { runTracker } from '../tracker/main'

const [port = '7070', dbPath = ':memory:'] = process.argv.slice(2)
await runTracker({
  host: '0.0.0.0',
  port: Number(port),
  dbPath,
  newKeyGrantMicro: 1_000_000_000,
  // the bench's clients are not farming: no proof of work, no per-prefix bound (bench/grant-work.ts measures those)
  grantWorkBits: 0,
  grantsPerPrefixPerDay: 1_000_000,
  checks: { probationProbes: 0, auditRate: 0, probeEveryMs: 3_600_000 },
})
