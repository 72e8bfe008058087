import { randomBytes } from 'node:crypto'
import { open, rename, rm, stat } from 'node:fs/promises'
import { z } from 'zod'
import type { Manifest, ManifestArtifact } from '../../protocol'

/** A record names at most a model's artifacts (hundreds at most, about 300 bytes each): anything larger is not ours. */
const MAX_RECORD_BYTES = 1 << 20

/** A file's identity as `stat` gives it: any write, truncation, rename over, chmod or link changes one of these. */
export interface FileIdentity {
  readonly dev: bigint
  readonly ino: bigint
  readonly size: bigint
  readonly mtimeNs: bigint
  readonly ctimeNs: bigint
}

const Decimal = z.string().regex(/^\d{1,30}$/)
const VerifiedFile = z
  .object({
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
    dev: Decimal,
    ino: Decimal,
    size: Decimal,
    mtimeNs: Decimal,
    ctimeNs: Decimal,
  })
  .strict()
type VerifiedFile = z.infer<typeof VerifiedFile>
/** `<dataDir>/models/<modelId>.verified.json` as this module writes it; read back as hostile input. */
const VerifiedRecord = z
  .object({ format: z.literal('neuron-verified/1'), files: z.record(z.string().max(255), VerifiedFile) })
  .strict()

export async function identityOf(path: string): Promise<FileIdentity | undefined> {
  const s = await stat(path, { bigint: true }).catch(() => undefined)
  if (s === undefined) return undefined
  return { dev: s.dev, ino: s.ino, size: s.size, mtimeNs: s.mtimeNs, ctimeNs: s.ctimeNs }
}

export function sameIdentity(a: FileIdentity, b: FileIdentity): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs
}

/**
 * Which artifact files of one model were checked against the manifest's sha256, and what each file
 * was (its stat identity) when it was: a restart trusts a file only while the sha256 it was checked
 * against is the manifest's and every stat field is unchanged, so it need not hash it again. A record
 * that is missing, unreadable, oversized or not in this format trusts nothing.
 */
export class VerifiedFiles {
  private constructor(
    private readonly path: string,
    private readonly files: Map<string, VerifiedFile>,
  ) {}

  /** The record at `path` (`<dataDir>/models/<modelId>.verified.json`), or an empty one when it cannot be used. */
  static async open(path: string, log?: (line: string) => void): Promise<VerifiedFiles> {
    const files = await readRecord(path).catch((error: unknown) => {
      log?.(
        `ignoring ${path} (${error instanceof Error ? error.message : String(error)}); artifacts on disk are ` +
          `checked again`,
      )
      return undefined
    })
    return new VerifiedFiles(path, new Map(Object.entries(files ?? {})))
  }

  /** True when the file at `path` is the one recorded as matching `artifact`'s sha256 and size, unchanged since. */
  async trusts(artifact: ManifestArtifact, path: string): Promise<boolean> {
    const entry = this.files.get(artifact.file)
    if (entry === undefined || entry.sha256 !== artifact.sha256 || BigInt(entry.size) !== BigInt(artifact.bytes))
      return false
    const now = await identityOf(path)
    return now !== undefined && sameIdentity(now, parseIdentity(entry))
  }

  /** Records that the file with identity `identity` (taken after it was checked) matched `artifact`. */
  remember(artifact: ManifestArtifact, identity: FileIdentity): void {
    const d = (n: bigint) => n.toString()
    this.files.set(artifact.file, {
      sha256: artifact.sha256,
      dev: d(identity.dev),
      ino: d(identity.ino),
      size: d(identity.size),
      mtimeNs: d(identity.mtimeNs),
      ctimeNs: d(identity.ctimeNs),
    })
  }

  forget(file: string): void {
    this.files.delete(file)
  }

  /**
   * Writes the record atomically (a unique temp file, fsynced,
   * renamed over), so a crash leaves the old record or the new.
   */
  async save(): Promise<void> {
    const body = JSON.stringify({ format: 'neuron-verified/1', files: Object.fromEntries(this.files) }, null, 1)
    const temp = `${this.path}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`
    try {
      const fh = await open(temp, 'wx')
      try {
        await fh.writeFile(body)
        await fh.sync()
      } finally {
        await fh.close()
      }
      await rename(temp, this.path)
    } catch (error) {
      await rm(temp, { force: true })
      throw error
    }
  }
}

/** The record's files, or undefined when there is none; throws when it is oversized or malformed. */
async function readRecord(path: string): Promise<Record<string, VerifiedFile> | undefined> {
  const fh = await open(path, 'r').catch((error: NodeJS.ErrnoException) => {
    if (error.code === 'ENOENT') return undefined
    throw error
  })
  if (fh === undefined) return undefined
  try {
    // Read one byte past the bound rather than trust fstat: the file may grow while it is read.
    const buf = Buffer.alloc(MAX_RECORD_BYTES + 1)
    let length = 0
    for (let n = -1; n !== 0 && length < buf.length; length += n)
      n = (await fh.read(buf, length, buf.length - length, length)).bytesRead
    if (length > MAX_RECORD_BYTES) throw new Error(`larger than ${MAX_RECORD_BYTES} bytes`)
    const parsed = VerifiedRecord.safeParse(JSON.parse(buf.subarray(0, length).toString('utf8')))
    if (!parsed.success)
      throw new Error(`not a neuron-verified/1 record: ${parsed.error.issues[0]?.message ?? 'invalid'}`)
    return parsed.data.files
  } finally {
    await fh.close()
  }
}

function parseIdentity(entry: VerifiedFile): FileIdentity {
  return {
    dev: BigInt(entry.dev),
    ino: BigInt(entry.ino),
    size: BigInt(entry.size),
    mtimeNs: BigInt(entry.mtimeNs),
    ctimeNs: BigInt(entry.ctimeNs),
  }
}

/**
 * A BitTorrent bitfield (piece i is bit 0x80 >> (i % 8) of byte i >> 3) of the model torrent's pieces
 * that lie wholly in `trusted` files; a piece that straddles a boundary needs every file it touches.
 * Files are in manifest order, as in the torrent (host/artifacts/model-torrent.ts).
 */
export function trustedPieces(manifest: Manifest, trusted: ReadonlySet<string>): Uint8Array {
  const total = manifest.artifacts.reduce((s, a) => s + a.bytes, 0)
  const pieces = Math.ceil(total / manifest.pieceBytes)
  const untrusted = new Uint8Array(pieces)
  let offset = 0
  for (const a of manifest.artifacts) {
    if (!trusted.has(a.file) && a.bytes > 0) {
      const last = Math.floor((offset + a.bytes - 1) / manifest.pieceBytes)
      for (let p = Math.floor(offset / manifest.pieceBytes); p <= last; p++) untrusted[p] = 1
    }
    offset += a.bytes
  }
  const bits = new Uint8Array(Math.ceil(pieces / 8))
  for (let p = 0; p < pieces; p++) if (untrusted[p] === 0) bits[p >> 3] = (bits[p >> 3] ?? 0) | (0x80 >> (p & 7))
  return bits
}
