/** How much of the old fit each new graph leaves: about the last 20 graphs count. */
const DECAY = 0.95

/**
 * What one batched graph costs by its rows, fitted over the last graphs run: ms = fixed + perRow × rows (least squares,
 * older graphs weighing less). Decode-only graphs (a row per session) and graphs with a prompt's chunk beside them
 * (many rows) give the fit its two ends; until both exist it knows no per-row cost.
 */
export class TickCost {
  private n = 0
  private sx = 0
  private sy = 0
  private sxx = 0
  private sxy = 0

  add(rows: number, ms: number): void {
    if (!(rows > 0) || !(ms >= 0) || !Number.isFinite(ms)) return
    this.n = this.n * DECAY + 1
    this.sx = this.sx * DECAY + rows
    this.sy = this.sy * DECAY + ms
    this.sxx = this.sxx * DECAY + rows * rows
    this.sxy = this.sxy * DECAY + rows * ms
  }

  /**
   * The prompt rows a graph of `otherRows` other rows may take so that it costs at most `factor` times what those rows
   * cost alone; undefined while the fit has no per-row cost (every graph so far about the same size).
   */
  rowsWithin(otherRows: number, factor: number): number | undefined {
    if (this.n < 2) return undefined
    const mx = this.sx / this.n
    const my = this.sy / this.n
    const varx = this.sxx / this.n - mx * mx
    if (varx < 1) return undefined
    const perRow = (this.sxy / this.n - mx * my) / varx
    if (!(perRow > 0)) return undefined
    const alone = Math.max(0, my + perRow * (otherRows - mx))
    // (a hair over: an exact fit sums to 4.999…)
    return Math.floor(((factor - 1) * alone) / perRow + 1e-9)
  }
}
