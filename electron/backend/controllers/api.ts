import { type ApiAccessView, maskApiKey, NeuronError } from '../../../protocol'
import type { CurrentSwarm } from '../current-swarm'
import type { SettingsStore } from '../settings-store'
import type { GroupHandlers } from './registry'

/**
 * The swarm's OpenAI-compatible API (`<tracker url>/v1`) and the app's key for it. On the embedded
 * tracker the key belongs to the app's own account (the one chat pays from): made on request, shown
 * once, kept only masked, revocable. A remote tracker's keys come from its operator.
 */
export class ApiController {
  readonly handlers: GroupHandlers<'api'> = {
    'api.get': () => this.view(),
    'api.createKey': async () => {
      const { tracker, accountId } = await this.ownAccount('make a key')
      const apiKey = await tracker.accounts.replaceKey(accountId)
      await this.store.update({ apiKey: { accountId, masked: maskApiKey(apiKey), createdAt: Date.now() } })
      return { apiKey, view: await this.view() }
    },
    'api.revokeKey': async () => {
      const { tracker, accountId } = await this.ownAccount('revoke a key')
      await tracker.accounts.revokeKeys(accountId)
      await this.store.update({ apiKey: null })
      return this.view()
    },
  }

  constructor(
    private readonly swarm: CurrentSwarm,
    private readonly store: SettingsStore,
  ) {}

  private async view(): Promise<ApiAccessView> {
    // The endpoint and key still show while the tracker does not answer; the examples then name no model.
    const models = await this.swarm.rpc('models.list', {}).then(
      (r) => r.models,
      () => [],
    )
    const embedded = this.swarm.embedded
    const account = embedded === null ? undefined : await embedded.accounts.byPublicKey(this.swarm.identity.publicKey)
    const saved = this.store.value.apiKey
    const key = saved !== null && saved.accountId === account?.accountId ? { masked: saved.masked, createdAt: saved.createdAt } : null
    return { endpoint: `${this.swarm.trackerUrl}/v1`, embedded: embedded !== null, modelIds: models.map((m) => m.modelId), key }
  }

  private async ownAccount(what: string) {
    const tracker = this.swarm.embedded
    if (tracker === null) {
      throw new NeuronError('not_available', `the app cannot ${what} on a remote tracker (${this.swarm.trackerUrl}): its API keys come from its operator`)
    }
    const account = await tracker.accounts.byPublicKey(this.swarm.identity.publicKey)
    if (account === undefined) throw new NeuronError('unknown_account', 'the embedded tracker has no account for this app yet; restart the app to make it')
    return { tracker, accountId: account.accountId }
  }
}
