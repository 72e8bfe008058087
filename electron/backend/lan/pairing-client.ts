import { z } from 'zod'
import {
  describeIssues,
  NeuronError,
  PairHelloReply,
  PairNonceReply,
  PairStatusReply,
  WireError,
} from '../../../protocol'

const TIMEOUT_MS = 5_000

/** The asking app's side of the pairing wire: one POST per message, its reply parsed, errors as NeuronError. */
export class PairingClient {
  constructor(
    private readonly address: string,
    private readonly port: number,
  ) {}

  hello(key: string, name: string): Promise<z.infer<typeof PairHelloReply>> {
    return this.post('/pair/hello', { key, name }, PairHelloReply)
  }
  nonce(pairingId: string, nonce: string): Promise<z.infer<typeof PairNonceReply>> {
    return this.post('/pair/nonce', { pairingId, nonce }, PairNonceReply)
  }
  confirm(pairingId: string, signature: string): Promise<PairStatusReply> {
    return this.post('/pair/confirm', { pairingId, signature }, PairStatusReply)
  }
  status(pairingId: string): Promise<PairStatusReply> {
    return this.post('/pair/status', { pairingId }, PairStatusReply)
  }
  refuse(pairingId: string): Promise<PairStatusReply> {
    return this.post('/pair/refuse', { pairingId }, PairStatusReply)
  }

  private async post<T extends z.ZodType>(path: string, body: unknown, schema: T): Promise<z.infer<T>> {
    const host = this.address.includes(':') ? `[${this.address}]` : this.address
    const url = `http://${host}:${this.port}${path}`
    let json: unknown
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      })
      json = await res.json()
    } catch (error) {
      const cause = error instanceof Error && error.cause instanceof Error ? error.cause.message : String(error)
      throw new NeuronError(
        'peer_unreachable',
        `the other app does not answer at ${url} (${cause}); check it is on and its switch "Open this swarm to my ` +
          `home network" is on`,
      )
    }
    const refused = z.object({ ok: z.literal(false), error: WireError }).safeParse(json)
    if (refused.success)
      throw new NeuronError(refused.data.error.code, `the other app says: ${refused.data.error.message}`)
    const value = schema.safeParse(z.object({ ok: z.literal(true), value: z.unknown() }).safeParse(json).data?.value)
    if (!value.success)
      throw new NeuronError(
        'bad_response',
        `the other app answered ${path} in a way this one does not read: ${describeIssues(path, value.error)}; ` +
          `update both apps`,
      )
    return value.data
  }
}
