import type { Receipt } from '../../protocol'

/** At most this many receipts go in one receipts.submit (the tracker takes up to MAX_RECEIPTS). */
const BATCH = 512

/**
 * The receipts a host signed and has not yet handed to its tracker: sent in batches every
 * `flushMs`, kept and sent again while the tracker is away (the oldest dropped past `maxQueued`).
 * The tracker settles each step once, whoever hands it in first.
 */
export class ReceiptOutbox<R = Receipt> {
  private queue: R[] = []
  private timer: NodeJS.Timeout | undefined
  private sending: Promise<void> | undefined

  constructor(
    private readonly submit: (receipts: R[]) => Promise<unknown>,
    private readonly log: (line: string) => void,
    private readonly flushMs = 1000,
    private readonly maxQueued = 100_000,
  ) {}

  add(receipt: R): void {
    if (this.queue.length >= this.maxQueued) {
      this.queue.shift()
      this.log(`more than ${this.maxQueued} receipts wait for the tracker; the oldest is dropped`)
    }
    this.queue.push(receipt)
    if (this.timer === undefined) {
      this.timer = setTimeout(() => {
        this.timer = undefined
        void this.flush()
      }, this.flushMs)
      this.timer.unref()
    }
  }

  /** Hands in everything queued; what the tracker does not take stays queued. */
  flush(): Promise<void> {
    this.sending ??= this.sendAll().finally(() => {
      this.sending = undefined
    })
    return this.sending
  }

  private async sendAll(): Promise<void> {
    while (this.queue.length > 0) {
      const batch = this.queue.slice(0, BATCH)
      try {
        await this.submit(batch)
      } catch (error) {
        this.log(`receipts not handed in yet (${error instanceof Error ? error.message : error}); trying again later`)
        if (this.timer === undefined) {
          this.timer = setTimeout(() => {
            this.timer = undefined
            void this.flush()
          }, this.flushMs * 5)
          this.timer.unref()
        }
        return
      }
      this.queue = this.queue.slice(batch.length)
    }
  }

  get pending(): number {
    return this.queue.length
  }

  close(): void {
    clearTimeout(this.timer)
    this.timer = undefined
  }
}
