import { NeuronError } from '../protocol'

/**
 * A host's stop() as the steps of its start see it: asked once; each step checks it and gives up ('stopped'), and work
 * that never ends on its own (a download) is left behind at once.
 */
export class StopSignal {
  stopped = false
  private requested: () => void = () => {}
  private readonly asked = new Promise<void>((resolve) => {
    this.requested = resolve
  })

  /** `what`: the message of the 'stopped' error, saying what did not happen. */
  constructor(private readonly what: () => string) {}

  request(): void {
    this.stopped = true
    this.requested()
  }

  check(): void {
    if (this.stopped) throw this.error()
  }

  error(): NeuronError {
    return new NeuronError('stopped', this.what())
  }

  /** Awaits `work` unless stop() comes first; then throws 'stopped' and leaves `work` behind. */
  async unless<T>(work: Promise<T>): Promise<T> {
    const settled = work.then((value) => ({ value }))
    // Work given up on may still fail later, with nobody waiting: that must not be an unhandled rejection.
    settled.catch(() => {})
    const done = await Promise.race([settled, this.asked])
    if (done === undefined || this.stopped) throw this.error()
    return done.value
  }
}
