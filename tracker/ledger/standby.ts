/**
 * Paid twins. A hop is audited by re-running its steps on another host of its blocks (a twin); a span with one host is
 * audited only by the tracker's own re-run, or not at all. A twin the router does not pick earns nothing, so without a
 * fee nobody would run one. So the route names up to STANDBY_TWINS twins for each hop that has them (route.plan,
 * RouteHop.standby), and every step that hop is paid for gives them the standby fee: `standbyBps` of the step's
 * charge, out of the route's price (the payer pays what it would without twins; the hop's host earns that much less),
 * paid to the twins' settled accounts with the step, in its transaction. An audit asks any eligible host of the
 * blocks, in random order (Auditor.others), so no twin knows it will be the one asked.
 *
 * Paid per step, not when the session ends: a payer who ended its session before the hosts handed in their receipts
 * would otherwise owe its twins nothing. A step voided later (its host lied) refunds the payer in full: the host's
 * share from its escrow, the swarm's fee and the twins' shares from the swarm's fee account. The twins keep theirs
 * (they stood by, and the audit that voided it needed one); the swarm pays for that.
 */

/** The standby fee by default: 5 % of each step's charge on a hop with twins, shared by the twins named for it. */
export const DEFAULT_STANDBY_BPS = 500
/** Twins a route names for one hop: the audit asks one; a second covers one gone by the time the audit runs. */
export const STANDBY_TWINS = 2

export interface StandbyHop {
  readonly hostId: string
  readonly blocks: readonly [number, number]
  /** The twins the route named to stand by for this hop (absent: none, or a route issued before standby fees). */
  readonly standby?: readonly string[]
}

/**
 * Each twin's share of one step's `charge` to `hostId` on `blocks`: `standbyBps` of it, split evenly (the remainder of
 * the split stays with the host), to the twins the session's last issue of that hop named. Neither the host itself
 * nor `issuedTo` (the payer's own node: it would pay itself) is ever a twin.
 */
export function standbyShares(
  hops: readonly StandbyHop[],
  r: { readonly hostId: string; readonly blocks: readonly [number, number] },
  charge: number,
  standbyBps: number,
  issuedTo: string | null,
): [string, number][] {
  const hop = hops.findLast((h) => h.hostId === r.hostId && h.blocks[0] === r.blocks[0] && h.blocks[1] === r.blocks[1])
  const twins = [...new Set(hop?.standby ?? [])].filter((t) => t !== r.hostId && t !== issuedTo).slice(0, STANDBY_TWINS)
  if (twins.length === 0 || charge <= 0) return []
  const each = Math.floor((charge * Math.min(Math.max(standbyBps, 0), 10_000)) / 10_000 / twins.length)
  return each > 0 ? twins.map((t) => [t, each]) : []
}
