import type { NodeIdentity } from '../../../identity/keys'
import { type LanPeer, NeuronError, type PairStatusReply, pairingConfirmMessage } from '../../../protocol'
import type { Pairing, PairingBook } from './pairing-book'
import { PairingClient } from './pairing-client'
import { nonceCommitment, pairingCode, pairingNonce } from './pairing-code'

/** How often the asking app asks how a confirmed pairing stands. */
const STATUS_EVERY_MS = 1_000

export interface AskingDeps {
  readonly book: PairingBook
  readonly identity: () => NodeIdentity
  /** This app's name as the other app lists it. */
  readonly name: () => string
  /** Both confirmed: join the asked app's swarm at `trackerUrl` and remember it as paired. */
  readonly join: (trackerUrl: string, peer: { key: string; name: string }) => Promise<void>
  readonly log: (line: string) => void
}

/**
 * The asking side (app B): asks a found app to pair, shows the code, and once its user and the other's
 * confirmed, switches this app's tracker to the other's embedded one.
 */
export class AskingPairings {
  constructor(private readonly deps: AskingDeps) {}

  async ask(peer: LanPeer): Promise<void> {
    const identity = this.deps.identity()
    const client = new PairingClient(peer.address, peer.pairingPort)
    const hello = await client.hello(identity.publicKey, this.deps.name())
    // The advertisement is not signed; the code is what proves the key.
    // A key other than the one listed is refused early all the same.
    if (hello.key !== peer.key) {
      throw new NeuronError(
        'pairing_failed',
        `the app at ${peer.address} answered with another key than it advertised; someone may be in between. ` +
          `Nothing was changed`,
      )
    }
    const myNonce = pairingNonce()
    const pairing: Pairing = {
      view: {
        pairingId: hello.pairingId,
        role: 'asking',
        peerKey: peer.key,
        peerName: peer.name,
        code: null,
        state: 'code',
        confirmedHere: false,
        confirmedThere: false,
        expiresAt: Math.min(hello.expiresAt, this.deps.book.expiresAt),
        message: null,
      },
      myNonce,
      peerNonce: null,
      commitment: hello.commitment,
      peer: { address: peer.address, pairingPort: peer.pairingPort, trackerPort: peer.trackerPort },
    }
    const { nonce } = await client.nonce(hello.pairingId, myNonce)
    if (nonceCommitment(peer.key, identity.publicKey, nonce) !== hello.commitment) {
      throw new NeuronError(
        'pairing_failed',
        `${peer.name} revealed a nonce it had not committed to; someone may be in between. Nothing was changed`,
      )
    }
    pairing.peerNonce = nonce
    pairing.view.code = pairingCode(peer.key, identity.publicKey, nonce, myNonce)
    this.deps.book.add(pairing)
  }

  /** This user saw the same code: tell the asked app (signed), then wait for its user, then join. */
  async confirm(pairingId: string): Promise<void> {
    const { book } = this.deps
    const pairing = book.open(pairingId)
    const code = pairing.view.code as string
    book.update(pairing, { confirmedHere: true })
    const client = this.client(pairing)
    const signature = this.deps.identity().sign(pairingConfirmMessage(pairingId, code))
    const reply = await client.confirm(pairingId, signature).catch((error: Error) => {
      book.settle(pairing, 'failed', error.message)
      throw error
    })
    void this.follow(pairing, client, reply)
  }

  async refuse(pairingId: string): Promise<void> {
    const pairing = this.deps.book.open(pairingId)
    this.deps.book.settle(pairing, 'refused', 'the pairing was refused on this computer; nothing was changed')
    await this.client(pairing)
      .refuse(pairingId)
      .catch((e: Error) =>
        this.deps.log(
          `pairing ${pairingId}: telling the other app of the refusal failed (${e.message}); it lapses there in a ` +
            `minute`,
        ),
      )
  }

  /** Asks every second until the asked app says paired, refused or expired, or this one's minute passes. */
  private async follow(pairing: Pairing, client: PairingClient, first: PairStatusReply): Promise<void> {
    const { book } = this.deps
    let reply = first
    for (;;) {
      if (book.get(pairing.view.pairingId).view.state !== 'code') return
      book.update(pairing, { confirmedThere: reply.confirmedByAsked })
      if (reply.state === 'paired') return this.joinPeer(pairing, reply.trackerPort)
      if (reply.state !== 'code') {
        const why = {
          refused: `refused on ${pairing.view.peerName}`,
          expired: 'expired there',
          failed: `failed on ${pairing.view.peerName}`,
        }[reply.state]
        return book.settle(pairing, reply.state, `the pairing was ${why}; nothing was changed. Ask again to retry`)
      }
      await new Promise((resolve) => setTimeout(resolve, STATUS_EVERY_MS))
      try {
        reply = await client.status(pairing.view.pairingId)
      } catch (error) {
        if (book.get(pairing.view.pairingId).view.state === 'code')
          book.settle(pairing, 'failed', error instanceof Error ? error.message : String(error))
        return
      }
    }
  }

  private async joinPeer(pairing: Pairing, trackerPort: number): Promise<void> {
    const { address } = pairing.peer as NonNullable<Pairing['peer']>
    const host = address.includes(':') ? `[${address}]` : address
    try {
      await this.deps.join(`http://${host}:${trackerPort}`, { key: pairing.view.peerKey, name: pairing.view.peerName })
      this.deps.book.settle(pairing, 'paired', null)
    } catch (error) {
      this.deps.book.settle(
        pairing,
        'failed',
        `paired, but joining ${pairing.view.peerName}'s swarm failed ` +
          `(${error instanceof Error ? error.message : error}); set its tracker in Settings`,
      )
    }
  }

  private client(pairing: Pairing): PairingClient {
    if (pairing.peer === null)
      throw new NeuronError('bad_request', 'this pairing was asked by the other app; confirm it with lan.confirm')
    return new PairingClient(pairing.peer.address, pairing.peer.pairingPort)
  }
}
