import type { HopInput, StepSigning } from '../../dataplane/hop-frames'
import { NeuronError, Receipt, readJson, readTrailer, SampledToken } from '../../protocol'
import type { HopState } from '../open-hops'
import { checkedAnswer, checkReceipt } from '../step-audits'
import { type StepAt, type StepRunner, stepForward } from './step-runner'

/** Steps that travel through the client between every two hops: it sends each hop its input and takes its answer. */
export class ClientRelayed implements StepRunner {
  constructor(
    public hops: HopState[],
    private readonly session: string,
    private readonly client: StepSigning['identity'],
  ) {}

  /** Each hop's receipt is checked against the bytes sent and answered. */
  async run(from: number, at: StepAt, first: HopInput, receipts: Receipt[]): Promise<SampledToken> {
    const hops = this.hops
    let input = first
    for (let i = from; i < hops.length; i++) {
      const h = hops[i] as HopState
      // Recorded before sending: if this hop fails, its replacement replays all but this and retries it.
      h.inputs.push(input)
      const started = performance.now()
      const answer = await h.link.request(stepForward(input, this.session, at, { identity: this.client, ...h.hop }))
      if (input.tokens === 1) h.stepMs.push(performance.now() - started)
      const receipt = readTrailer(answer, Receipt)
      const sketch = checkReceipt(h.hop.hostId, input, answer, receipt, h.sampling)
      if (receipt !== undefined) receipts.push(receipt)
      h.receipts.push(receipt)
      h.sketches.push(sketch)
      h.lastOutput = new Uint8Array(answer.payload)
      if (answer.kind === 'token') return readJson(answer, SampledToken)
      if (answer.kind !== 'hidden')
        throw new NeuronError('bad_frame', `host ${h.hop.hostId} answered a forward with ${answer.kind}`)
      input = checkedAnswer(h.hop, answer, at.ids)
    }
    throw new NeuronError('internal', 'the route ended without a last hop')
  }

  reroute(hops: HopState[]): void {
    this.hops = hops
  }

  /** The client saw every input and answer: nothing to fetch. */
  async readyForAudit(): Promise<void> {}
}
