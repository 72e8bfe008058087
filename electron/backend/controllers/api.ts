import { interfaceAddresses } from '../../../host/network/candidates'
import { API_REQUEST_LOG_MAX, type ApiAccessView, type ApiRequestLog, maskApiKey, NeuronError } from '../../../protocol'
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
    'api.requests': () => this.requests(),
  }

  constructor(
    private readonly swarm: CurrentSwarm,
    private readonly store: SettingsStore,
  ) {}

  /**
   * Another identity is in use: the key of the account it replaced is revoked (the new identity starts with none).
   * On a remote tracker now, the embedded tracker's key is revoked when the app is next on it (revokeStale).
   */
  async identityReplaced(previousPublicKey: string): Promise<void> {
    const tracker = this.swarm.embedded
    const previous = await tracker?.accounts.byPublicKey(previousPublicKey)
    if (tracker == null || previous === undefined) return
    await tracker.accounts.revokeKeys(previous.accountId)
    if (this.store.value.apiKey?.accountId === previous.accountId) await this.store.update({ apiKey: null })
  }

  /** A key the app made for an account that is no longer its own (an identity replaced elsewhere) is revoked. */
  private async revokeStale(ownAccountId: string | undefined): Promise<void> {
    const saved = this.store.value.apiKey
    const tracker = this.swarm.embedded
    if (tracker === null || saved === null || ownAccountId === undefined || saved.accountId === ownAccountId) return
    await tracker.accounts.revokeKeys(saved.accountId)
    await this.store.update({ apiKey: null })
  }

  private async view(): Promise<ApiAccessView> {
    // The endpoint and key still show while the tracker does not answer; the examples then name no model.
    const models = await this.swarm.rpc('models.list', {}).then(
      (r) => r.models,
      () => [],
    )
    const embedded = this.swarm.embedded
    const account = embedded === null ? undefined : await embedded.accounts.byPublicKey(this.swarm.identity.publicKey)
    await this.revokeStale(account?.accountId)
    const saved = this.store.value.apiKey
    const key =
      saved !== null && saved.accountId === account?.accountId
        ? { masked: saved.masked, createdAt: saved.createdAt }
        : null
    const lanOpen = embedded !== null && embedded.address().address === '0.0.0.0'
    return {
      endpoint: `${lanOpen ? lanUrl(this.swarm.trackerUrl) : this.swarm.trackerUrl}/v1`,
      lanOpen,
      embedded: embedded !== null,
      modelIds: models.map((m) => m.modelId),
      key,
    }
  }

  /**
   * The app account's latest requests on the embedded tracker, newest first; a remote tracker's operator keeps its own.
   */
  private async requests(): Promise<ApiRequestLog> {
    const tracker = this.swarm.embedded
    const account = await tracker?.accounts.byPublicKey(this.swarm.identity.publicKey)
    if (tracker == null || account === undefined) return { requests: [] }
    const rows = await tracker.store.apiRequests.recent(account.accountId, API_REQUEST_LOG_MAX)
    return {
      requests: rows.map(({ startedAt, endpoint, modelId, promptTokens, completionTokens, chargedMicro, status }) => ({
        startedAt,
        endpoint,
        modelId,
        promptTokens,
        completionTokens,
        chargedMicro,
        status,
      })),
    }
  }

  private async ownAccount(what: string) {
    const tracker = this.swarm.embedded
    if (tracker === null) {
      throw new NeuronError(
        'not_available',
        `the app cannot ${what} on a remote tracker (${this.swarm.trackerUrl}): its API keys come from its operator`,
      )
    }
    const account = await tracker.accounts.byPublicKey(this.swarm.identity.publicKey)
    if (account === undefined)
      throw new NeuronError(
        'unknown_account',
        'the embedded tracker has no account for this app yet; restart the app to make it',
      )
    return { tracker, accountId: account.accountId }
  }
}

/**
 * The embedded tracker's URL at this computer's first LAN address
 * (IPv4, not loopback): what other computers at home dial.
 */
function lanUrl(localUrl: string): string {
  const url = new URL(localUrl)
  const lan = interfaceAddresses().find((a) => !a.startsWith('127.'))
  if (lan !== undefined) url.hostname = lan
  return url.toString().replace(/\/$/, '')
}
