import { type KeyObject, verify } from 'node:crypto'
import { publicKeyObject, verifySignature } from '../../identity/keys'
import {
  ChainedReceipt,
  NodeId,
  REPLAY_STEP_BASE,
  type Receipt,
  Receipt as ReceiptSchema,
  receiptMessage,
  stepMessage,
} from '../../protocol'
import type { IssuedSession } from './issued-session'
import { receiptKey } from './ledger'
import type { LedgerStore } from './ledger-store'
import { checkTerms } from './receipt-terms'
import type { ReceiptVerdict } from './verdicts'

/** Why a receipt is not paid; `fault`: the refusal counts against the host it names (ReceiptVerdict.fault). */
export interface Refusal {
  readonly hostId: string
  readonly session: string | null
  readonly step: number | null
  readonly code: string
  readonly message: string
  readonly fault: boolean
}

/** A receipt the checks pass, with the seams it does not join (reported, not refused), or why it is refused. */
export type CheckedStep =
  | { readonly payable: Receipt; readonly issued: IssuedSession; readonly seams: readonly string[] }
  | { readonly refused: Refusal }

/**
 * Whether a host's receipt is payable, in one order: a receipt of this session, which the tracker routed, for a hop it
 * issued, signed by the host's registered key, the host not banned, the step signed by the session's client (a
 * forwarded hop-to-hop step too: the client countersigns it, or the chain it was forwarded with carries the client's
 * signature at the route's first hop), on the ticket's terms (receipt-terms.ts); a step's
 * seams with the hops before and after it are checked against what they signed. step-pay.ts pays what passes.
 */
export class StepCheck {
  /** Parsed host keys: building a KeyObject costs more than checking a signature with it. */
  private readonly keys = new Map<string, KeyObject>()

  constructor(
    /** This tracker's key: receipts must name it (absent in ledger-only tests). */
    private readonly trackerKey: string | undefined,
    /** Hosts the checks banned: their receipts are refused (whatever they ran, they ran as liars). */
    private readonly banned: (hostId: string) => boolean,
  ) {}

  /** `keys`: the signers' registered keys, read before the transaction `store` is bound to. */
  async check(
    store: Pick<LedgerStore, 'receiptHashes'>,
    session: string,
    issued: IssuedSession | undefined,
    keys: ReadonlyMap<string, string | undefined>,
    raw: unknown,
    now: number,
  ): Promise<CheckedStep> {
    const refused = (hostId: string, step: number | null, code: string, message: string, fault = false) => ({
      refused: { hostId, session, step, code, message, fault },
    })
    const parsed = ReceiptSchema.safeParse(raw)
    // Named back in the verdict only when it is a node id: a claim of any other shape is a peer's arbitrary text.
    const claimed =
      typeof raw === 'object' && raw !== null && 'hostId' in raw && NodeId.safeParse(raw.hostId).success
        ? String(raw.hostId)
        : 'unknown'
    if (!parsed.success)
      return refused(claimed, null, 'bad_receipt', `not a receipt: ${parsed.error.issues[0]?.message ?? ''}`)
    const r = parsed.data
    if (r.session !== session)
      return refused(
        r.hostId,
        r.step,
        'route_mismatch',
        `receipt is for session ${r.session}, submitted for ${session}`,
      )
    if (issued === undefined)
      return refused(r.hostId, r.step, 'unknown_session', `the tracker issued no route for session ${session}`)
    const publicKey = keys.get(r.hostId)
    const { signature, ...body } = r
    const signed = publicKey !== undefined && this.verify(publicKey, receiptMessage(body), signature)
    if (!issued.hops.some((h) => h.hostId === r.hostId && h.blocks[0] === r.blocks[0] && h.blocks[1] === r.blocks[1])) {
      return refused(
        r.hostId,
        r.step,
        'route_mismatch',
        `host ${r.hostId} blocks [${r.blocks[0]}, ${r.blocks[1]}) is not a hop the tracker issued for session ` +
          `${session}`,
        signed,
      )
    }
    if (!signed) {
      return refused(
        r.hostId,
        r.step,
        'bad_signature',
        `receipt for step ${r.step} is not signed by host ${r.hostId}'s registered key`,
      )
    }
    if (this.banned(r.hostId))
      return refused(r.hostId, r.step, 'banned_host', `host ${r.hostId} is banned; nothing it hands in is paid`)
    // a step the client never sent has no client signature: its receipt is the host's claim alone (a step forwarded
    // into the hop proves the client's signature by its chain, when the client never countersigned it)
    if (issued.clientKey !== null && !clientSignedStep(issued.clientKey, r) && !this.chainProves(issued, keys, raw, r))
      return refused(
        r.hostId,
        r.step,
        'no_client_signature',
        `step ${r.step} carries no signature of the session's client; only steps a client sent are paid`,
        true,
      )
    issued.lastUsed = now
    const terms = checkTerms(issued, r, this.trackerKey)
    // A step at a position other than its ticket's: the client
    // chose the position, the host only signed it; no host's fault.
    if (terms !== undefined)
      return refused(r.hostId, r.step, terms.code, terms.message, terms.code !== 'position_mismatch')
    const seams = r.step >= REPLAY_STEP_BASE ? [] : await seamBreaks(store, session, issued.hops, r)
    return { payable: r, issued, seams }
  }

  /**
   * Whether a receipt handed in with its chain (ChainedReceipt) is a step its session's client asked for: the first
   * hop's receipt carries the client's signature of the step, both it and the predecessor's are the route's hops' and
   * signed by their registered keys, and the predecessor's output is this step's input.
   */
  private chainProves(
    issued: IssuedSession,
    keys: ReadonlyMap<string, string | undefined>,
    raw: unknown,
    r: Receipt,
  ): boolean {
    const chain = ChainedReceipt.safeParse(raw).data?.chain
    if (chain === undefined || issued.clientKey === null) return false
    const { origin, prev } = chain
    const sameStep = (c: Receipt) =>
      c.session === r.session && c.step === r.step && c.position === r.position && c.tokens === r.tokens
    const onRoute = (c: Receipt) =>
      issued.hops.some((h) => h.hostId === c.hostId && h.blocks[0] === c.blocks[0] && h.blocks[1] === c.blocks[1])
    const signedByHost = (c: Receipt) => {
      const key = keys.get(c.hostId)
      const { signature, ...body } = c
      return key !== undefined && this.verify(key, receiptMessage(body), signature)
    }
    return (
      [origin, prev].every((c) => sameStep(c) && onRoute(c) && signedByHost(c)) &&
      prev.output === r.input &&
      prev.blocks[1] === r.blocks[0] &&
      clientSignedStep(issued.clientKey, origin)
    )
  }

  private verify(publicKey: string, message: string, signature: string): boolean {
    try {
      let key = this.keys.get(publicKey)
      if (key === undefined) {
        key = publicKeyObject(publicKey)
        this.keys.set(publicKey, key)
      }
      return verify(null, Buffer.from(message), key, Buffer.from(signature, 'base64url'))
    } catch {
      return false
    }
  }
}

/** Records a refused receipt (the host's dashboard lists it) and answers its verdict. */
export async function refuse(store: Pick<LedgerStore, 'reject'>, r: Refusal, now: number): Promise<ReceiptVerdict> {
  await store.reject({
    hostId: r.hostId,
    session: r.session,
    step: r.step,
    code: r.code,
    message: r.message,
    createdAt: now,
  })
  return {
    hostId: r.hostId,
    step: r.step ?? -1,
    ok: false,
    code: r.code,
    message: r.message,
    charged: 0,
    fault: r.fault,
  }
}

/**
 * The step's hops before and after `r`, where settled, must hand over exactly what `r` signs it took
 * and gave; one message per seam that does not join.
 */
export async function seamBreaks(
  store: Pick<LedgerStore, 'receiptHashes'>,
  session: string,
  hops: readonly { readonly blocks: readonly [number, number] }[],
  r: Receipt,
): Promise<string[]> {
  const breaks: string[] = []
  for (const h of hops) {
    const before = h.blocks[1] === r.blocks[0]
    if (!before && h.blocks[0] !== r.blocks[1]) continue
    const other = await store.receiptHashes(receiptKey({ session, step: r.step, blocks: [h.blocks[0], h.blocks[1]] }))
    if (other === undefined || (before ? other.output === r.input : other.input === r.output)) continue
    const [a, b] = before ? [h.blocks, r.blocks] : [r.blocks, h.blocks]
    breaks.push(`step ${r.step}: blocks [${b[0]}, ${b[1]}) took other bytes than blocks [${a[0]}, ${a[1]}) answered`)
  }
  return breaks
}

/**
 * Whether the receipt embeds `clientKey`'s signature of the very
 * step it bills: its session, hop, step, positions and input.
 */
export function clientSignedStep(clientKey: string, r: Receipt): boolean {
  if (r.client === undefined) return false
  const terms = {
    session: r.session,
    hostId: r.hostId,
    blocks: r.blocks,
    step: r.step,
    position: r.position,
    tokens: r.tokens,
    input: r.input,
  }
  return verifySignature(clientKey, stepMessage(terms), r.client)
}
