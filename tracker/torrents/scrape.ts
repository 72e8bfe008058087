import type { IncomingMessage, ServerResponse } from 'node:http'

/** Counts for one torrent, as a scrape reports them. */
export interface SwarmCounts {
  readonly complete: number
  readonly incomplete: number
}

/** Most infohashes one scrape may ask about. */
export const MAX_SCRAPE_HASHES = 100
/** Seconds a client should leave between scrapes. */
const MIN_SCRAPE_INTERVAL_S = 60

/**
 * Answers `GET /scrape?info_hash=…` (BEP 48) from bittorrent-tracker's swarms (keyed by hex
 * infohash): a bencoded dictionary whose `files` are keyed by the 20-byte binary infohashes asked
 * for (every known swarm when none is named). bittorrent-tracker 11 keys its own answer by a binary
 * *string* that bencode writes as UTF-8, so a hash with any byte of 0x80 or more came out mangled;
 * this answer writes the raw bytes.
 */
export function serveScrape(
  req: IncomingMessage,
  res: ServerResponse,
  swarms: Readonly<Record<string, SwarmCounts>>,
): void {
  res.writeHead(200, { 'content-type': 'text/plain' }).end(scrapeResponse((req.url ?? '').split('?')[1] ?? '', swarms))
}

function scrapeResponse(query: string, swarms: Readonly<Record<string, SwarmCounts>>): Buffer {
  const asked = query
    .split('&')
    .filter((pair) => pair.startsWith('info_hash='))
    .map((pair) => percentDecode(pair.slice('info_hash='.length)))
  if (asked.length > MAX_SCRAPE_HASHES)
    return failure(`a scrape names at most ${MAX_SCRAPE_HASHES} info_hash values, this one ${asked.length}`)
  const wrong = asked.findIndex((h) => h?.length !== 20)
  if (wrong >= 0) {
    const got = asked[wrong]
    return failure(
      `each info_hash is 20 bytes, percent-encoded; got ` +
        `${got === undefined ? 'a malformed escape' : `${got.length} bytes`}`,
    )
  }
  const hashes = asked.length > 0 ? (asked as Buffer[]) : Object.keys(swarms).map((hex) => Buffer.from(hex, 'hex'))
  const files = new Map<Buffer, Bencoded>()
  for (const hash of hashes) {
    const hex = hash.toString('hex')
    const counts = Object.hasOwn(swarms, hex) ? swarms[hex] : undefined
    const complete = counts?.complete ?? 0
    // Swarms count peers, not finished downloads: `complete` is the lower bound bittorrent-tracker gives too.
    files.set(
      hash,
      new Map<Buffer, Bencoded>([
        [Buffer.from('complete'), complete],
        [Buffer.from('downloaded'), complete],
        [Buffer.from('incomplete'), counts?.incomplete ?? 0],
      ]),
    )
  }
  const flags = new Map<Buffer, Bencoded>([[Buffer.from('min_request_interval'), MIN_SCRAPE_INTERVAL_S]])
  return bencode(
    new Map([
      [Buffer.from('files'), files],
      [Buffer.from('flags'), flags],
    ]),
  )
}

function failure(reason: string): Buffer {
  return bencode(new Map([[Buffer.from('failure reason'), Buffer.from(reason)]]))
}

/** The bytes of a percent-encoded query value (`+` is a space); undefined when an escape is malformed. */
function percentDecode(value: string): Buffer | undefined {
  const bytes: number[] = []
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i)
    if (c === 0x25) {
      const hex = value.slice(i + 1, i + 3)
      if (!/^[0-9a-fA-F]{2}$/.test(hex)) return undefined
      bytes.push(Number.parseInt(hex, 16))
      i += 2
    } else if (c > 0x7e) return undefined
    else bytes.push(c === 0x2b ? 0x20 : c)
  }
  return Buffer.from(bytes)
}

type Bencoded = number | Buffer | Map<Buffer, Bencoded>

/** Bencode for the few shapes a scrape answer has; dictionary keys are raw bytes, sorted as bytes. */
function bencode(value: Bencoded): Buffer {
  if (typeof value === 'number') return Buffer.from(`i${Math.trunc(value)}e`)
  if (Buffer.isBuffer(value)) return Buffer.concat([Buffer.from(`${value.length}:`), value])
  const entries = [...value.entries()].sort(([a], [b]) => Buffer.compare(a, b))
  return Buffer.concat([Buffer.from('d'), ...entries.flatMap(([k, v]) => [bencode(k), bencode(v)]), Buffer.from('e')])
}
