// A raw client of one ShardServer, as the shard server's tests drive it: its tracker's tickets, opens signed by the
// ticket's client, steps signed for the blocks they opened, and the typed errors the host answers.
import { join } from 'node:path'
import WebSocket from 'ws'
import { forwardFrame } from '../dataplane/hop-frames'
import { packModel } from '../gguf/pack'
import type { ShardServerOptions } from '../host/serving/shard-server'
import { NodeIdentity } from '../identity/keys'
import { manifestSha256, signOpen, signTicket } from '../identity/tickets'
import { ShardRuntime } from '../native'
import { decodeFrame, type Frame, jsonFrame, type Manifest, type Ticket } from '../protocol'
import { STORIES_260K, scratchDir } from './models'

export const trackerKey = NodeIdentity.generate()
export const clientKey = NodeIdentity.generate()
export const HOST_ID = 'ab'.repeat(10)

/** A client's connection to the host: frames in, one answer each, in order. */
export interface Connection {
  exchange(bytes: Uint8Array): Promise<Frame>
  close(): void
}

export async function connect(at: string): Promise<Connection> {
  const socket = new WebSocket(at)
  await new Promise((resolve, reject) => {
    socket.once('open', resolve)
    socket.once('error', reject)
  })
  return {
    async exchange(bytes) {
      const reply = new Promise<Buffer>((resolve) => socket.once('message', (data) => resolve(data as Buffer)))
      socket.send(bytes)
      return decodeFrame(await reply)
    },
    close: () => socket.close(),
  }
}

/** The tickets and server options of a host of `manifest`'s whole model, for `trackerKey`'s HOST_ID. */
export function ticketing(manifest: Manifest) {
  /** A server of the whole model whose opens need `trackerKey`'s tickets for HOST_ID. */
  function serverOptions(
    options: Partial<ShardServerOptions> & Pick<ShardServerOptions, 'maxSessions'>,
  ): ShardServerOptions {
    const tickets = {
      trackerKey: () => trackerKey.publicKey,
      hostId: HOST_ID,
      manifestSha256: manifestSha256(manifest),
    }
    return {
      modelId: manifest.modelId,
      blocks: [0, 5],
      embed: true,
      head: true,
      nEmbd: manifest.nEmbd,
      tickets,
      ...options,
    }
  }

  /**
   * An open frame carrying the tracker's ticket for `body`, signed by the client (`ticket` overrides the ticket's
   * terms).
   */
  function ticketedOpen(
    s: string,
    body: { modelId: unknown; blocks: [number, number]; maxTokens: number; [k: string]: unknown },
    ticket: Partial<Parameters<typeof signTicket>[1]> = {},
    /**
     * `client`: the key the ticket is issued to; `signer`: who signs the open (default the client); `forge`: the
     * client's edit of the signed ticket.
     */
    options: {
      tracker?: NodeIdentity
      client?: NodeIdentity
      signer?: NodeIdentity
      forge?: (t: Ticket) => Ticket
    } = {},
  ): Uint8Array {
    const signed = signTicket(options.tracker ?? trackerKey, {
      session: s,
      clientKey: (options.client ?? clientKey).publicKey,
      hostId: HOST_ID,
      blocks: body.blocks,
      maxTokens: body.maxTokens,
      promptTokens: body.maxTokens,
      modelId: manifest.modelId,
      manifestSha256: manifestSha256(manifest),
      price: { promptMicroPerToken: 25, completionMicroPerToken: 100 },
      expiresAt: Date.now() + 60_000,
      ...ticket,
    })
    const t = options.forge?.(signed) ?? signed
    return jsonFrame('open', s, 0, {
      ...body,
      ticket: t,
      signature: signOpen(options.signer ?? options.client ?? clientKey, t, body),
    })
  }

  return { serverOptions, ticketedOpen }
}

export const session = (n: number) => n.toString(16).padStart(32, '0')

interface SignedAs {
  blocks?: readonly [number, number]
  signer?: NodeIdentity
  flags?: number
}
/** A forward of token ids, signed by the session's client (`signer`) for the blocks it opened, as every step is. */
export const tokens = (
  s: string,
  step: number,
  position: number,
  ids: number[],
  { blocks = [0, 5], signer = clientKey, flags = 0 }: SignedAs = {},
) => {
  const data = Int32Array.from(ids)
  return forwardFrame(
    { dtype: 'i32', tokens: ids.length, width: 1, payload: new Uint8Array(data.buffer) },
    flags,
    s,
    step,
    position,
    {
      identity: signer,
      hostId: HOST_ID,
      blocks,
    },
  )
}

export const errorOf = (f: Frame) =>
  f.kind === 'error' ? (JSON.parse(Buffer.from(f.payload).toString()) as { code: string; message: string }) : undefined

/**
 * stories260K packed in a scratch directory and its whole model (or `blocks` of it) loaded (one thread), with the
 * tickets and server options of a host of it (`ticketing`: a whole-model host unless the test says otherwise);
 * `close()` frees the runtime and the directory. The host tests' common setup.
 */
export async function wholeStories(
  blocks: [number, number] = [0, 5],
): Promise<ReturnType<typeof ticketing> & { manifest: Manifest; runtime: ShardRuntime; close(): Promise<void> }> {
  const { dir, cleanup } = await scratchDir()
  const manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed') })
  const runtime = await ShardRuntime.load({
    artifacts: manifest.artifacts.map((a) => join(dir, 'packed', a.file)),
    blocks,
    embed: blocks[0] === 0,
    head: blocks[1] === manifest.nLayer,
    threads: 1,
  })
  return {
    ...ticketing(manifest),
    manifest,
    runtime,
    async close() {
      runtime.dispose()
      await cleanup()
    },
  }
}
