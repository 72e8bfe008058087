// The client's signatures of steps forwarded into a hop (hop-to-hop): the hop could not show the client's signature
// when it ran them, so its receipt is unsigned until the client countersigns it, off the critical path, and the hop
// answers with the signed receipt. Only signed receipts are the client's to hand in: an unsigned one is refused by the
// tracker (no_client_signature) and counted against the hop that did the work.
import type { StepSigning } from '../../dataplane/hop-frames'
import { jsonFrame, Receipt, readTrailer, stepMessage } from '../../protocol'
import type { HopState } from '../open-hops'

/** How long a session's end waits for its last countersigns' answers, ms (a hop's answer takes one round trip). */
const COUNTERSIGN_WAIT_MS = 5_000

export class Countersigns {
  private readonly pending = new Set<Promise<void>>()
  private signed: Receipt[] = []

  constructor(
    private readonly session: string,
    private readonly client: StepSigning['identity'],
  ) {}

  /** Signs the step `unsigned` names over the input it names; the signed receipt replaces it in the hop's list. */
  sign(h: HopState, unsigned: Receipt): void {
    const { session, hostId, blocks, step, position, tokens, input } = unsigned
    const signature = this.client.sign(stepMessage({ session, hostId, blocks, step, position, tokens, input }))
    const done = h.link.request(jsonFrame('sign', this.session, step, { client: signature })).then(
      (answer) => {
        const signed = readTrailer(answer, Receipt)
        const at = h.receipts.indexOf(unsigned)
        if (signed === undefined || signed.input !== unsigned.input || signed.output !== unsigned.output) return
        if (at >= 0) h.receipts[at] = signed
        this.signed.push(signed)
      },
      () => {}, // a hop gone meanwhile: its failover says so (and the hop hands in the step with its chain)
    )
    this.pending.add(done)
    void done.finally(() => this.pending.delete(done))
  }

  /** The receipts signed since the last call. */
  take(): Receipt[] {
    const signed = this.signed
    this.signed = []
    return signed
  }

  /** Waits for the countersigns in flight (at most `timeoutMs`: a hop may never answer), then takes what was signed. */
  async settled(timeoutMs = COUNTERSIGN_WAIT_MS): Promise<Receipt[]> {
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, timeoutMs)
    })
    await Promise.race([Promise.all([...this.pending]), late])
    clearTimeout(timer)
    return this.take()
  }
}
