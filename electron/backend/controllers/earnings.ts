import { ClientToTracker, callRpc, DashboardReceipt, type Earnings, NeuronError } from '../../../protocol'
import { type CurrentSwarm, RPC_TIMEOUT_MS, type TrackerSocket } from '../current-swarm'
import { fetchHostDashboard, type HostDashboard, toEarnings } from '../dashboard'
import type { AppEventBus } from '../events'
import { hostShare } from '../preview'
import type { GroupHandlers } from './registry'

export interface EarningsDeps {
  readonly swarm: CurrentSwarm
  readonly events: AppEventBus
  /** A receipt for this host settled (hosting recounts what it served). */
  receiptSettled(): void
  readonly log: (line: string) => void
}

/**
 * This host's earnings and the app account's balance: fetched from the tracker's dashboard, and kept
 * up to date by its receipt pushes, each told as what that receipt earned.
 */
export class EarningsController {
  readonly handlers: GroupHandlers<'earnings'> = {
    'earnings.get': async () => {
      const board = await this.dashboard()
      // The embedded tracker tells the app's account; a remote one answers account.balance for the app's key pair.
      const embedded = await this.deps.swarm.accountBalance()
      return toEarnings(this.deps.swarm.hostId, board, embedded !== undefined ? embedded : await this.remoteAccount())
    },
  }
  /**
   * This host's settled plus pending balance as last told (dashboard
   * or receipt push): a push's earnings are that less this.
   */
  private hostBalanceSeen: number | null = null
  /** The app account's balance as a remote tracker's last push told it. */
  private accountBalanceSeen: number | null = null
  /** Receipt pushes for this host so far: a dashboard fetched while one arrived has an older balance than the push. */
  private receiptPushes = 0

  constructor(private readonly deps: EarningsDeps) {}

  /**
   * The app's account on a remote tracker, asked with its own key pair; a tracker without account.balance (older),
   * without an account for the key, or not answering: the balance its last push told, if any.
   */
  private async remoteAccount(): Promise<Earnings['account']> {
    try {
      const { accountId, balanceMicro } = await this.deps.swarm.rpc('account.balance', {})
      return { accountId, balanceMicro }
    } catch (error) {
      if (!(error instanceof NeuronError) || !['unknown_event', 'unknown_account'].includes(error.code))
        this.deps.log(
          `the app's balance on ${this.deps.swarm.trackerUrl}: ${error instanceof Error ? error.message : error}`,
        )
      return this.accountBalanceSeen === null ? null : { accountId: null, balanceMicro: this.accountBalanceSeen }
    }
  }

  /** Follows this host's receipt pushes on a tracker client just joined. */
  subscribe(socket: TrackerSocket): void {
    socket.on('dashboard.receipt', (raw: unknown) => this.onReceipt(raw))
    callRpc(socket, ClientToTracker, 'dashboard.subscribe', { hostIds: [this.deps.swarm.hostId] }, RPC_TIMEOUT_MS)
      .then(
        // The balance the first push's earnings are counted from.
        () => this.dashboard(),
        (e: Error) => this.deps.log(`dashboard pushes unavailable: ${e.message}`),
      )
      .catch((e: Error) => this.deps.log(`this host's balance unknown until its next receipt: ${e.message}`))
  }

  /** Another swarm or identity: the balances told so far are not its own. */
  forget(): void {
    this.hostBalanceSeen = null
    this.accountBalanceSeen = null
  }

  /** This host's dashboard; its balance becomes the one the next push's earnings are counted from. */
  async dashboard(): Promise<HostDashboard> {
    const hostId = this.deps.swarm.hostId
    const pushes = this.receiptPushes
    const board = await fetchHostDashboard(this.deps.swarm.trackerUrl, hostId, this.deps.swarm.identity)
    // A push that came meanwhile told a newer balance than this answer may hold.
    if (pushes === this.receiptPushes && hostId === this.deps.swarm.hostId)
      this.hostBalanceSeen = board.balance_micro + board.pending_micro
    return board
  }

  private onReceipt(raw: unknown): void {
    const parsed = DashboardReceipt.safeParse(raw)
    if (!parsed.success) return
    const p = parsed.data
    // The account room's pushes (receipts this app paid for) carry its balance; this host's room, what it earned.
    if (p.accountBalanceMicro !== undefined) {
      this.accountBalanceSeen = p.accountBalanceMicro
      return
    }
    if (p.hostId !== this.deps.swarm.hostId) return
    this.receiptPushes++
    // The tracker's balance change, settled and pending together (a release moves credits between them, earning
    // nothing); before any balance is known, the host's share of the charge at the default fee (a twin's standby fee
    // is its own: the fee came out of the step before).
    const total = p.hostBalanceMicro + (p.hostPendingMicro ?? 0)
    const shareOf = (charged: number) => (p.code === 'standby' ? charged : hostShare(charged))
    const earnedMicro =
      this.hostBalanceSeen !== null ? total - this.hostBalanceSeen : p.ok ? shareOf(p.chargedMicro) : 0
    this.hostBalanceSeen = total
    const pending = p.hostPendingMicro === undefined ? {} : { pendingMicro: p.hostPendingMicro }
    this.deps.events.emit('earnings.receipt', {
      hostId: p.hostId,
      ok: p.ok,
      modelId: p.modelId,
      earnedMicro,
      balanceMicro: p.hostBalanceMicro,
      ...pending,
    })
    this.deps.receiptSettled()
  }
}
