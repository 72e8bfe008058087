import type { Namespace, Socket } from 'socket.io'
import { consumerAccount, escrowAccount, hostAccount } from '../ledger/accounts'
import type { LedgerStore } from '../ledger/ledger-store'
import type { ReceiptVerdict } from '../ledger/verdicts'

/**
 * Pushes a settled or refused receipt to the dashboards subscribed to its host and its payer's account.
 * Settled receipts carry their balances; a refused one reads them only when a dashboard is listening.
 */
export async function pushVerdict(
  ns: Namespace,
  ledger: LedgerStore,
  session: string,
  v: ReceiptVerdict,
  accountId: string | null,
  modelId: string | null,
  /** Other tracker instances share the rooms (tracker/cluster/): a dashboard may listen there, unseen from here. */
  clustered = false,
): Promise<void> {
  const hostRoom = `host:${v.hostId}`
  const accountRoom = accountId === null ? undefined : `account:${accountId}`
  const listening = (room: string | undefined) =>
    room !== undefined && (clustered || (ns.adapter.rooms.get(room)?.size ?? 0) > 0)
  if (!(listening(hostRoom) || listening(accountRoom))) return
  const push = {
    hostId: v.hostId,
    session,
    step: v.step,
    ok: v.ok,
    ...(v.code === undefined ? {} : { code: v.code }),
    modelId,
    chargedMicro: v.charged,
    hostBalanceMicro: v.balances?.host ?? (await ledger.balance(hostAccount(v.hostId))),
    hostPendingMicro: v.balances?.pending ?? (await ledger.balance(escrowAccount(v.hostId))),
  }
  if (listening(hostRoom)) ns.to(hostRoom).emit('dashboard.receipt', push)
  if (accountId !== null && listening(accountRoom))
    ns.to(`account:${accountId}`).emit('dashboard.receipt', {
      ...push,
      accountBalanceMicro: v.balances?.account ?? (await ledger.balance(consumerAccount(accountId))),
    })
}

/**
 * Joins a client's socket to its account's room once the account is read (pushes before that are missed: a dashboard
 * reads balances when it opens).
 */
export function joinAccountRoom(
  socket: Socket,
  account: Promise<{ readonly accountId: string } | undefined>,
  log: (line: string) => void,
): void {
  account.then(
    (a) => {
      if (a !== undefined) void socket.join(`account:${a.accountId}`)
    },
    (e: Error) => log(`reading the account of ${socket.data?.nodeId ?? 'a client'} failed: ${e.message}`),
  )
}

/** A dashboard's subscription to hosts' receipts: the connection joins each host's room; the rpc's answer. */
export function joinHostRooms(socket: Socket, hostIds: string[]): { hostIds: string[] } {
  for (const id of hostIds) void socket.join(`host:${id}`)
  return { hostIds }
}
