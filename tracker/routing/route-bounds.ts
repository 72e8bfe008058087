import { type RouteCosts, relayMs, searchStepMs } from './costs'
import type { ServedSpan } from './swarm-view'

/**
 * Best route costs around a joining host, for placement's exclusion rule (a host that would slow every
 * route it joins is refused), searched before the host has joined. The new host has no latency
 * measurements yet, so every link here costs the default estimate. reach[b]: the cheapest way to
 * have the hidden state after block b - 1 ready to send (0 at the client for b = 0); leave[b]: the
 * cheapest way from sending that state to the token reaching the client. Ready hosts only, at their load.
 * A hop starts and ends only at allowed cuts (`cuts[b]` = 1; absent, everywhere), so both are infinite elsewhere.
 */
export class RouteBounds {
  readonly bestMs: number
  private readonly reach: Float64Array
  private readonly leave: Float64Array
  private readonly linkMs: number

  constructor(spans: readonly ServedSpan[], n: number, costs: RouteCosts, cuts?: Uint8Array) {
    const allowed = (b: number) => cuts === undefined || cuts[b] === 1
    this.linkMs = costs.defaultLatencyMs
    const ready = spans.filter((s) => s.status === 'ready')
    const step = Float64Array.from(ready, (s) => searchStepMs(s, costs))
    const penalty = Float64Array.from(ready, (s) => relayMs(s, costs))
    // Hosts covering each block, as compressed rows.
    const rowStart = new Int32Array(n + 1)
    for (const s of ready)
      for (let b = s.blocks[0]; b < s.blocks[1]; b++) rowStart[b + 1] = (rowStart[b + 1] as number) + 1
    for (let b = 0; b < n; b++) rowStart[b + 1] = (rowStart[b + 1] as number) + (rowStart[b] as number)
    const next = rowStart.slice(0, n)
    const rows = new Int32Array(rowStart[n] as number)
    ready.forEach((s, h) => {
      for (let b = s.blocks[0]; b < s.blocks[1]; b++) {
        rows[next[b] as number] = h
        next[b] = (next[b] as number) + 1
      }
    })

    this.reach = new Float64Array(n + 1).fill(Number.POSITIVE_INFINITY)
    this.reach[0] = 0
    const cur = new Float64Array(ready.length).fill(Number.POSITIVE_INFINITY)
    for (let b = 0; b < n; b++) {
      let best = Number.POSITIVE_INFINITY
      for (let k = rowStart[b] as number; k < (rowStart[b + 1] as number); k++) {
        const h = rows[k] as number
        const ms =
          Math.min(cur[h] as number, (this.reach[b] as number) + this.linkMs + (penalty[h] as number)) +
          (step[h] as number)
        cur[h] = ms
        if (ms < best) best = ms
      }
      this.reach[b + 1] = allowed(b + 1) ? best : Number.POSITIVE_INFINITY
    }

    this.leave = new Float64Array(n + 1).fill(Number.POSITIVE_INFINITY)
    this.leave[n] = this.linkMs
    cur.fill(Number.POSITIVE_INFINITY)
    for (let b = n - 1; b >= 0; b--) {
      let best = Number.POSITIVE_INFINITY
      for (let k = rowStart[b] as number; k < (rowStart[b + 1] as number); k++) {
        const h = rows[k] as number
        const ms = (step[h] as number) + Math.min(cur[h] as number, this.leave[b + 1] as number)
        cur[h] = ms
        const entered = this.linkMs + (penalty[h] as number) + ms
        if (entered < best) best = entered
      }
      this.leave[b] = allowed(b) ? best : Number.POSITIVE_INFINITY
    }
    this.bestMs = this.leave[0] as number
  }

  /** The fastest route in which the new host serves exactly [a, e), its hop costing hopMs. */
  throughNewHost(a: number, e: number, hopMs: number): number {
    return (this.reach[a] as number) + this.linkMs + hopMs + (this.leave[e] as number)
  }
}
