/** How much each new graph moves an estimate (exponential averages over about the last 10 graphs). */
const ALPHA = 0.1
/** Below this, the positions seen so far cannot tell a row's cost from its position's: one cost for every row. */
const MIN_DET = 1e-6

/**
 * What the batcher's graphs cost, measured as they run: a graph of decode steps alone, and the rows of a prompt's chunk
 * beside them. A chunk's row attends to the prompt so far, so it costs more the further in it is: a row at position p
 * costs about c0 + c1·p, fitted (least squares, older graphs weighing less) from each chunk's rows and start. The
 * batcher cuts a chunk from these: as many rows as keep a graph within a factor of the decode steps' cost alone.
 */
export class TickCost {
  private decodeMs: number | undefined
  // decayed sums of the fit's normal equations: x1 = rows, x2 = the rows' positions summed, y = the ms they added
  private s11 = 0
  private s12 = 0
  private s22 = 0
  private t1 = 0
  private t2 = 0

  /** A graph of decode steps (no prompt rows) took `ms`. */
  decodeOnly(ms: number): void {
    if (!(ms >= 0) || !Number.isFinite(ms)) return
    this.decodeMs = this.decodeMs === undefined ? ms : this.decodeMs + ALPHA * (ms - this.decodeMs)
  }

  /** A graph of decode steps and a chunk of `rows` prompt rows from position `start` took `ms`. */
  mixed(rows: number, start: number, ms: number): void {
    if (this.decodeMs === undefined || !(rows > 0) || !(start >= 0) || !(ms >= 0) || !Number.isFinite(ms)) return
    const y = Math.max(0, ms - this.decodeMs)
    const x1 = rows
    const x2 = rows * (start + (rows - 1) / 2)
    const keep = 1 - ALPHA
    this.s11 = keep * this.s11 + x1 * x1
    this.s12 = keep * this.s12 + x1 * x2
    this.s22 = keep * this.s22 + x2 * x2
    this.t1 = keep * this.t1 + x1 * y
    this.t2 = keep * this.t2 + x2 * y
  }

  /**
   * The most rows (up to `max`) a chunk starting at position `start` may have so that its graph costs at most `factor`
   * times the decode steps' graph alone; undefined until both are measured.
   */
  rowsWithin(factor: number, start: number, max: number): number | undefined {
    if (this.decodeMs === undefined || this.s11 === 0) return undefined
    const [c0, c1] = this.coefficients()
    const budget = (factor - 1) * this.decodeMs
    let rows = 0
    while (rows < max && added(c0, c1, rows + 1, start) <= budget) rows++
    return rows
  }

  /** c0 and c1 of a row's cost c0 + c1·position; one cost for every row while the positions seen are too alike. */
  private coefficients(): [number, number] {
    const det = this.s11 * this.s22 - this.s12 * this.s12
    if (det > MIN_DET * this.s11 * this.s22) {
      const c0 = (this.t1 * this.s22 - this.t2 * this.s12) / det
      const c1 = (this.s11 * this.t2 - this.s12 * this.t1) / det
      if (c1 >= 0) return [Math.max(0, c0), c1]
    }
    return [Math.max(0, this.t1 / this.s11), 0]
  }
}

/** What `rows` rows from position `start` add to a graph, at c0 + c1·position each. */
function added(c0: number, c1: number, rows: number, start: number): number {
  return rows * c0 + c1 * rows * (start + (rows - 1) / 2)
}
