import { existsSync } from 'node:fs'
import { MICRO, NeuronError, PublicKey } from '../protocol'
import { isPostgresUrl, openTrackerStore } from '../tracker/db/postgres-store'
import { Accounts } from '../tracker/ledger/accounts'
import { intOption, parseCommandArgs, requireOption } from './args'
import type { Command } from './command'

export const accountCommand: Command = {
  name: 'account',
  usage: `Usage: neuron account create --db tracker.sqlite|postgres://… [--name NAME] [--grant-micro N]
                             [--public-key KEY]

Creates an account in the tracker's database, its SQLite file or PostgreSQL URL (the tracker may be
running), and prints its API key once; only the key's sha256 is stored. 1 credit = 1,000,000 micro-credits; the grant
defaults to NEURON_STARTING_GRANT_MICRO or 10 credits. On a private swarm (--allow-keys) the
gateway serves only accounts made for a listed --public-key.

Example: neuron account create --db /tmp/neuron.sqlite --name me`,
  async run(args) {
    const { values, positionals } = parseCommandArgs(args, {
      db: { type: 'string' },
      name: { type: 'string' },
      'grant-micro': { type: 'string' },
      'public-key': { type: 'string' },
    })
    if (positionals[0] !== 'create')
      throw new NeuronError(
        'bad_option',
        'the account command has one action: neuron account create --db tracker.sqlite.',
      )
    const db = requireOption('db', values.db)
    if (!isPostgresUrl(db) && !existsSync(db))
      throw new NeuronError(
        'bad_option',
        `${db} does not exist; give the --db file (or postgres:// URL) your tracker runs on.`,
      )
    const store = await openTrackerStore(db)
    try {
      const envGrant = Number(process.env.NEURON_STARTING_GRANT_MICRO)
      const accounts = new Accounts(store, Number.isSafeInteger(envGrant) && envGrant >= 0 ? envGrant : 10 * MICRO)
      const grantMicro = intOption('grant-micro', values['grant-micro'])
      const publicKey = values['public-key']
      if (publicKey !== undefined && !PublicKey.safeParse(publicKey).success)
        throw new NeuronError(
          'bad_option',
          `--public-key "${publicKey}" is not a public key (43 characters of base64url, as the app's Settings or a ` +
            `host's log show it).`,
        )
      const created = await accounts.create({
        ...(values.name === undefined ? {} : { name: values.name }),
        ...(grantMicro === undefined ? {} : { grantMicro }),
        ...(publicKey === undefined ? {} : { publicKey }),
      })
      console.log(
        JSON.stringify({
          account_id: created.account.accountId,
          name: created.account.name,
          api_key: created.apiKey,
          grant_micro: created.grantMicro,
        }),
      )
    } finally {
      await store.close()
    }
    return 0
  },
}
