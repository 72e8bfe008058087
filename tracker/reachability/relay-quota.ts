import { MAX_FRAME_BYTES, NeuronError } from '../../protocol'

/**
 * Bounds what one client key may push through the tracker's relay: frames no larger than a host
 * accepts, and a few in flight at once (an honest client has one per hop of its step).
 */
export class RelayQuota {
  private readonly inFlight = new Map<string, number>()

  constructor(private readonly maxInFlightPerKey = 8) {}

  async run<T>(publicKey: string, frameBytes: number, relay: () => Promise<T>): Promise<T> {
    if (frameBytes > MAX_FRAME_BYTES)
      throw new NeuronError(
        'frame_too_large',
        `a relayed frame of ${frameBytes} bytes exceeds a host's ${MAX_FRAME_BYTES}; send the prompt in smaller ` +
          `chunks.`,
        {
          bytes: frameBytes,
          max: MAX_FRAME_BYTES,
        },
      )
    const now = this.inFlight.get(publicKey) ?? 0
    if (now >= this.maxInFlightPerKey)
      throw new NeuronError(
        'relay_quota',
        `this key has ${now} relayed frames in flight, the most one key may; wait for their answers.`,
        {
          maxInFlight: this.maxInFlightPerKey,
        },
      )
    this.inFlight.set(publicKey, now + 1)
    try {
      return await relay()
    } finally {
      const left = (this.inFlight.get(publicKey) ?? 1) - 1
      if (left === 0) this.inFlight.delete(publicKey)
      else this.inFlight.set(publicKey, left)
    }
  }
}
