/** A token bucket of bytes: a second's worth of burst, refilled continuously. */
export class ByteBucket {
  private tokens: number
  private at = performance.now()

  constructor(readonly bytesPerSecond: number) {
    this.tokens = bytesPerSecond
  }

  take(bytes: number): boolean {
    const now = performance.now()
    this.tokens = Math.min(this.bytesPerSecond, this.tokens + ((now - this.at) / 1000) * this.bytesPerSecond)
    this.at = now
    if (bytes > this.tokens) return false
    this.tokens -= bytes
    return true
  }
}
