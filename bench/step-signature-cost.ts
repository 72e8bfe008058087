// What signing every step costs one hop, in ms: the client hashes the hop's input and signs the step's terms
// (dataplane/hop-frames.ts), the host hashes what it took and checks that signature (host/serving/step/signed-step.ts).
// bench:route reports it beside the per-hop overhead it measures; `npx tsx bench/step-signature-cost.ts` alone.
import { randomBytes } from 'node:crypto'
import { NodeIdentity, publicKeyObject, verifySignature } from '../identity/keys'
import { payloadSha256 } from '../identity/tickets'
import { stepMessage } from '../protocol'

/** Median ms of one step's sign (client side) and verify (host side) over `steps` steps of a `payloadBytes` input. */
export function stepSignatureCost(payloadBytes: number, steps = 2000): { signMs: number; verifyMs: number } {
  const client = NodeIdentity.generate()
  const key = publicKeyObject(client.publicKey)
  const payload = randomBytes(payloadBytes)
  const sign: number[] = []
  const verify: number[] = []
  for (let step = 0; step < steps; step++) {
    const terms = {
      session: 'a'.repeat(32),
      hostId: 'b'.repeat(20),
      blocks: [0, 8] as [number, number],
      step,
      position: step,
      tokens: 1,
    }
    let t = performance.now()
    const signature = client.sign(stepMessage({ ...terms, input: payloadSha256(payload) }))
    sign.push(performance.now() - t)
    t = performance.now()
    if (!verifySignature(key, stepMessage({ ...terms, input: payloadSha256(payload) }), signature))
      throw new Error('a step signature did not verify')
    verify.push(performance.now() - t)
  }
  const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? Number.NaN
  return { signMs: median(sign), verifyMs: median(verify) }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  // a decode step's hidden state of a 2048-wide model in f16, and of an 8192-wide one
  for (const bytes of [4096, 16384]) console.log(JSON.stringify({ payload_bytes: bytes, ...stepSignatureCost(bytes) }))
}
