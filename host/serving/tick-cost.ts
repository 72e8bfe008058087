/** How much each new graph moves an estimate (an exponential average over about the last 10 graphs). */
const ALPHA = 0.1

/**
 * What the batcher's graphs cost, measured as they run: a graph of decode steps alone, and each prompt row a graph
 * carries beside them (a chunk's rows attend to the prompt so far, so they cost more than a decode row). The batcher
 * cuts a prompt's chunk from these: as many rows as keep a graph within a factor of the decode steps' cost alone.
 */
export class TickCost {
  private decodeMs: number | undefined
  private promptRowMs: number | undefined

  /** A graph of decode steps (no prompt rows) took `ms`. */
  decodeOnly(ms: number): void {
    if (!(ms >= 0) || !Number.isFinite(ms)) return
    this.decodeMs = this.decodeMs === undefined ? ms : this.decodeMs + ALPHA * (ms - this.decodeMs)
  }

  /** A graph of decode steps and `promptRows` rows of a prompt beside them took `ms`. */
  mixed(promptRows: number, ms: number): void {
    if (this.decodeMs === undefined || !(promptRows > 0) || !(ms >= 0) || !Number.isFinite(ms)) return
    const perRow = Math.max(0, ms - this.decodeMs) / promptRows
    this.promptRowMs = this.promptRowMs === undefined ? perRow : this.promptRowMs + ALPHA * (perRow - this.promptRowMs)
  }

  /**
   * The prompt rows a graph may carry beside decode steps so that it costs at most `factor` times their graph alone;
   * undefined until both costs are measured.
   */
  rowsWithin(factor: number): number | undefined {
    if (this.decodeMs === undefined || this.promptRowMs === undefined) return undefined
    if (this.promptRowMs <= 0) return Number.POSITIVE_INFINITY
    // (a hair over: an exact fit sums to 4.999…)
    return Math.floor(((factor - 1) * this.decodeMs) / this.promptRowMs + 1e-9)
  }
}
