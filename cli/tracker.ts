import { availableParallelism } from 'node:os'
import { type ReferenceRerunsOptions, referenceReruns } from '../host/reference-reruns'
import {
  DEFAULT_GRANT_WORK_BITS,
  DEFAULT_GRANTS_PER_PREFIX_PER_DAY,
  MAX_GRANT_WORK_BITS,
  NeuronError,
  parseAllowedKeys,
} from '../protocol'
import { parseStunPort, runTracker, stunPortOption, TRACKER_DEFAULTS } from '../tracker/main'
import { intOption, parseCommandArgs, readOptionFile, tlsOptions } from './args'
import type { Command } from './command'

export const trackerCommand: Command = {
  name: 'tracker',
  usage: `Usage: neuron tracker [--port ${TRACKER_DEFAULTS.port}] [--host ${TRACKER_DEFAULTS.host}] [--stun-port N|off]
       [--db ${TRACKER_DEFAULTS.dbPath}] [--key-file FILE] [--heartbeat-ms ${TRACKER_DEFAULTS.heartbeatMs}]
       [--redis redis://HOST:6379]
       [--new-key-grant-micro N] [--new-accounts-per-minute 30]
       [--grant-work-bits ${DEFAULT_GRANT_WORK_BITS}] [--grants-per-prefix-per-day ${DEFAULT_GRANTS_PER_PREFIX_PER_DAY}]
       [--tls-key key.pem --tls-cert cert.pem] [--allow-keys FILE]
       [--settlement-window-ms 86400000] [--audit-rate 0.05] [--probation-probes 3] [--log-routes]
       [--rerun-dir DIR [--rerun-gb 2] [--rerun-threads 1]]

A key without an account is refused a route unless --new-key-grant-micro (or
$NEURON_NEW_KEY_GRANT_MICRO) gives each new key that many micro-credits, once, to at
most --new-accounts-per-minute new keys a minute. A key claims it with a proof of work:
--grant-work-bits leading zero bits of sha256 (the default takes about a second of one
core; each bit more doubles it; 0 asks none and grants on a key's first route). One
network (IPv4 /24, IPv6 /48, loopback too) takes at most --grants-per-prefix-per-day
grants a day. Defaults: $NEURON_GRANT_WORK_BITS, $NEURON_GRANTS_PER_PREFIX_PER_DAY, else
those shown.

  --stun-port N|off       answer STUN Binding requests (RFC 8489) on this UDP port, on --host: hosts
                          behind home routers learn there the address their router gives them, to
                          punch holes to each other. Default: the --port number (UDP, so the same
                          number is free; a firewall must let UDP in too); 0: a free port; off: none
  --db FILE|URL           the tracker's state: a SQLite file (the default, created if absent), or a
                          PostgreSQL database: postgres://user:password@host:5432/neuron
  --key-file FILE         the tracker's key pair (created if absent); default FILE.tracker-key.pem
                          beside a SQLite --db, else ./tracker-key.pem
  --redis URL             run as one of several instances of this swarm: they share the
                          PostgreSQL --db and the --key-file, and meet in this Redis (hosts and
                          clients take their URLs as a comma-separated --tracker list, or one
                          load balancer's URL); see docs/deployment.md
  --tls-key, --tls-cert   serve https:// and wss:// with this PEM key and certificate (it must
                          name --host); clients of a self-signed one start with
                          NODE_EXTRA_CA_CERTS=cert.pem
  --allow-keys FILE       a private swarm: only these public keys (one base64url key a line, #
                          comments) may join, use the gateway and dashboards, or announce; a
                          gateway account must be made for a listed key (public_key)
  --settlement-window-ms  how long host earnings stay pending (voided if the host is caught
                          lying) before they are settled; default $NEURON_SETTLEMENT_WINDOW_MS or
                          a day; 0 settles at once
  --audit-rate F          the chance that a client has each hop's session re-run on another host
                          once it is over (0 to 1); default $NEURON_AUDIT_RATE or 0.25; hosts on
                          probation 1
  --rerun-dir DIR         re-run blocks that only one host serves here, for audits: a host that
                          lies the same way to every client agrees with its own re-run, and is
                          caught only against another run. Their artifacts are fetched from the
                          swarm into DIR, at most --rerun-gb GiB of them (default 2), each span
                          run on --rerun-threads CPU threads (default 1); a span past the budget
                          is marked unaudited in routes, as without this option

Example: neuron tracker --port 7070 --db /tmp/neuron-tracker.sqlite`,
  async run(args) {
    const { values } = parseCommandArgs(args, {
      port: { type: 'string' },
      'stun-port': { type: 'string' },
      host: { type: 'string' },
      db: { type: 'string' },
      'key-file': { type: 'string' },
      redis: { type: 'string' },
      'heartbeat-ms': { type: 'string' },
      'new-key-grant-micro': { type: 'string' },
      'new-accounts-per-minute': { type: 'string' },
      'grant-work-bits': { type: 'string' },
      'grants-per-prefix-per-day': { type: 'string' },
      'tls-key': { type: 'string' },
      'tls-cert': { type: 'string' },
      'allow-keys': { type: 'string' },
      'settlement-window-ms': { type: 'string' },
      'audit-rate': { type: 'string' },
      'probation-probes': { type: 'string' },
      'log-routes': { type: 'boolean' },
      'rerun-dir': { type: 'string' },
      'rerun-gb': { type: 'string' },
      'rerun-threads': { type: 'string' },
    })
    const tls = tlsOptions(values)
    const allowedKeys = values['allow-keys'] === undefined ? undefined : allowedKeysOption(values['allow-keys'])
    const newKeyGrantMicro = intOption('new-key-grant-micro', values['new-key-grant-micro'], { min: 1 })
    const newAccountsPerMinute = intOption('new-accounts-per-minute', values['new-accounts-per-minute'], { min: 1 })
    const grantWorkBits = intOption('grant-work-bits', values['grant-work-bits'], { min: 0, max: MAX_GRANT_WORK_BITS })
    const grantsPerPrefixPerDay = intOption('grants-per-prefix-per-day', values['grants-per-prefix-per-day'], {
      min: 1,
    })
    const port = intOption('port', values.port)
    const stunPort = parseStunPort(values['stun-port'], '--stun-port')
    const heartbeatMs = intOption('heartbeat-ms', values['heartbeat-ms'], { min: 50 })
    const settlementWindowMs = intOption('settlement-window-ms', values['settlement-window-ms'], { min: 0 })
    const auditRate = values['audit-rate'] === undefined ? undefined : Number(values['audit-rate'])
    const probationProbes = intOption('probation-probes', values['probation-probes'], { min: 0 })
    if (auditRate !== undefined && !(auditRate >= 0 && auditRate <= 1))
      throw new NeuronError(
        'bad_option',
        `--audit-rate is a fraction from 0 to 1 (0.05 audits one step in 20), not ${values['audit-rate']}.`,
      )
    const ownReruns = rerunOptions(values)
    await runTracker({
      ...(port === undefined ? {} : { port }),
      ...stunPortOption(stunPort, port),
      ...(values.host === undefined ? {} : { host: values.host }),
      ...(values.db === undefined ? {} : { dbPath: values.db }),
      ...(values['key-file'] === undefined ? {} : { keyPath: values['key-file'] }),
      ...(values.redis === undefined ? {} : { redisUrl: values.redis }),
      ...(heartbeatMs === undefined ? {} : { heartbeatMs }),
      ...(newKeyGrantMicro === undefined ? {} : { newKeyGrantMicro }),
      ...(newAccountsPerMinute === undefined ? {} : { newAccountsPerMinute }),
      ...(grantWorkBits === undefined ? {} : { grantWorkBits }),
      ...(grantsPerPrefixPerDay === undefined ? {} : { grantsPerPrefixPerDay }),
      ...(tls === undefined ? {} : { tls }),
      ...(allowedKeys === undefined ? {} : { allowedKeys }),
      ...(settlementWindowMs === undefined ? {} : { settlementWindowMs }),
      checks: {
        ...(auditRate === undefined ? {} : { auditRate }),
        ...(probationProbes === undefined ? {} : { probationProbes }),
      },
      ...(values['log-routes'] === true ? { logRoutes: true } : {}),
      ...(ownReruns === undefined ? {} : { ownReruns: referenceReruns(ownReruns) }),
    })
    return 0
  },
}

/** --rerun-dir, --rerun-gb, --rerun-threads: the spans the tracker re-runs itself; undefined without a directory. */
function rerunOptions(values: {
  'rerun-dir'?: string | undefined
  'rerun-gb'?: string | undefined
  'rerun-threads'?: string | undefined
}): ReferenceRerunsOptions | undefined {
  const dir = values['rerun-dir']
  if (dir === undefined) {
    if (values['rerun-gb'] !== undefined || values['rerun-threads'] !== undefined)
      throw new NeuronError('bad_option', '--rerun-gb and --rerun-threads need --rerun-dir DIR: where the spans go.')
    return undefined
  }
  const gb = values['rerun-gb'] === undefined ? undefined : Number(values['rerun-gb'])
  if (gb !== undefined && !(gb > 0 && Number.isFinite(gb)))
    throw new NeuronError('bad_option', `--rerun-gb is a number of GiB above 0 (2 runs small spans), not ${gb}.`)
  const threads = intOption('rerun-threads', values['rerun-threads'], { min: 1, max: availableParallelism() })
  return {
    dataDir: dir,
    ...(gb === undefined ? {} : { maxBytes: Math.round(gb * 1024 ** 3) }),
    ...(threads === undefined ? {} : { threads }),
  }
}

/** --allow-keys FILE: the listed keys; a file that lists none is refused (it would admit nobody). */
function allowedKeysOption(path: string): string[] {
  const keys = parseAllowedKeys(
    readOptionFile('allow-keys', path, 'a file of public keys, one a line'),
    `--allow-keys ${path}`,
  )
  if (keys.length === 0)
    throw new NeuronError(
      'bad_option',
      `--allow-keys ${path} lists no keys, so the swarm would admit nobody; add a public key a line, or leave the ` +
        `option out for an open swarm.`,
    )
  return keys
}
