import { randomBytes } from 'node:crypto'
import type { z } from 'zod'
import { verifySignature } from '../../../identity/keys'
import {
  NeuronError,
  type PairAsk,
  type PairConfirm,
  type PairHello,
  type PairHelloReply,
  type PairNonce,
  type PairNonceReply,
  type PairStatusReply,
  pairingConfirmMessage,
} from '../../../protocol'
import type { Pairing, PairingBook } from './pairing-book'
import { nonceCommitment, pairingCode, pairingNonce } from './pairing-code'

export interface AskedDeps {
  readonly book: PairingBook
  /** This app's public key. */
  readonly key: () => string
  /** The embedded tracker's port, where a paired app joins. */
  readonly trackerPort: () => number
  /** Admits the asking app's key to the embedded swarm and remembers it; the pairing is done when this has. */
  readonly admit: (key: string, name: string) => Promise<void>
  readonly log: (line: string) => void
  /**
   * Whether `key` is an app this one found on the network (mDNS) at `address`: its hello skips the per-address bound,
   * so a flood from another program never keeps a real app from pairing. Absent: every app is a stranger.
   */
  readonly advertised?: (key: string, address: string) => boolean
}

/**
 * The asked side (app A): what its pairing endpoint answers, and its user's confirm and refuse. The
 * asking app's key is admitted only once both users confirmed the same code before the pairing lapsed.
 */
export class AskedPairings {
  constructor(private readonly deps: AskedDeps) {}

  /** A pairing asked for by `request.key` from `from` (the address its hello came from). */
  hello(request: z.infer<typeof PairHello>, from: string): z.infer<typeof PairHelloReply> {
    const { book } = this.deps
    const myKey = this.deps.key()
    if (request.key === myKey) throw new NeuronError('bad_request', 'an app cannot pair with itself')
    const myNonce = pairingNonce()
    const pairingId = randomBytes(16).toString('base64url')
    const expiresAt = book.expiresAt
    book.add({
      view: {
        pairingId,
        role: 'asked',
        peerKey: request.key,
        peerName: request.name,
        code: null,
        state: 'code',
        confirmedHere: false,
        confirmedThere: false,
        expiresAt,
        message: null,
      },
      myNonce,
      peerNonce: null,
      commitment: null,
      peer: null,
      from: { address: from, advertised: this.deps.advertised?.(request.key, from) === true },
    })
    this.deps.log(`pairing ${pairingId}: ${request.name} asks to join this swarm`)
    return { pairingId, key: myKey, commitment: nonceCommitment(myKey, request.key, myNonce), expiresAt }
  }

  nonce(request: z.infer<typeof PairNonce>): z.infer<typeof PairNonceReply> {
    const pairing = this.deps.book.open(request.pairingId)
    if (pairing.peerNonce !== null)
      throw new NeuronError('bad_request', 'this pairing has its nonce already; ask to pair again')
    pairing.peerNonce = request.nonce
    this.deps.book.update(pairing, {
      code: pairingCode(this.deps.key(), pairing.view.peerKey, pairing.myNonce, request.nonce),
    })
    return { nonce: pairing.myNonce }
  }

  /** The asking user confirmed: its signature must be over the code this screen shows. */
  async confirmed(request: z.infer<typeof PairConfirm>): Promise<PairStatusReply> {
    const { book } = this.deps
    const pairing = book.open(request.pairingId)
    const code = pairing.view.code
    if (code === null) throw new NeuronError('bad_request', 'confirm came before the nonces; send the nonce first')
    if (
      !verifySignature(pairing.view.peerKey, pairingConfirmMessage(pairing.view.pairingId, code), request.signature)
    ) {
      book.settle(
        pairing,
        'failed',
        `${pairing.view.peerName} confirmed another code than the one shown here: someone may be in between; ` +
          `nothing was added. Ask again`,
      )
      throw new NeuronError(
        'pairing_failed',
        'the confirmation does not sign the code shown on the asked screen; nothing was added. Ask again and ' +
          'compare the codes',
      )
    }
    book.update(pairing, { confirmedThere: true })
    await this.settleIfBoth(pairing)
    return this.status(request)
  }

  status(request: z.infer<typeof PairAsk>): PairStatusReply {
    const { view } = this.deps.book.get(request.pairingId)
    return { state: view.state, confirmedByAsked: view.confirmedHere, trackerPort: this.deps.trackerPort() }
  }

  /** Refused by the asking user (over the wire) or by this one. */
  refuse(request: z.infer<typeof PairAsk>, by: 'here' | 'there'): PairStatusReply {
    const pairing = this.deps.book.open(request.pairingId)
    const who = by === 'here' ? 'this computer' : pairing.view.peerName
    this.deps.book.settle(pairing, 'refused', `the pairing was refused on ${who}; nothing was added`)
    return this.status(request)
  }

  /** This app's user saw the same code. */
  async confirmHere(pairingId: string): Promise<void> {
    const pairing = this.deps.book.open(pairingId)
    if (pairing.view.code === null)
      throw new NeuronError('pairing_not_ready', 'the other app has not sent its part of the code yet; wait a second')
    this.deps.book.update(pairing, { confirmedHere: true })
    await this.settleIfBoth(pairing)
  }

  private async settleIfBoth(pairing: Pairing): Promise<void> {
    const { view } = pairing
    if (!view.confirmedHere || !view.confirmedThere || view.state !== 'code') return
    try {
      await this.deps.admit(view.peerKey, view.peerName)
      this.deps.book.settle(pairing, 'paired', null)
      this.deps.log(`pairing ${view.pairingId}: ${view.peerName} admitted to this swarm`)
    } catch (error) {
      this.deps.book.settle(
        pairing,
        'failed',
        `could not admit ${view.peerName} (${error instanceof Error ? error.message : error}); ask again`,
      )
    }
  }
}
