// A probe set as one binary blob, as it travels in model.publish (Socket.IO refuses a message of more
// than 10 binary attachments, and a set has one per probe and boundary) and as the tracker stores it:
// a u32 little-endian length, a JSON header (everything but the hidden states), then every probe's
// hidden states' bytes back to back, in order (each tokens × (width + side) × 4 bytes, per the header).
import { z } from 'zod'
import { NeuronError } from './errors'
import { MAX_SEAM_VALUES } from './limits'
import { MAX_PROBE_SET_BYTES, ProbeSet, probeBoundary } from './probes'

/** An encoded probe set: its hidden states plus room for the header's tokens and accept lists. */
export const ProbeSetBytes = z
  .custom<Uint8Array>((v) => v instanceof Uint8Array, 'expected binary data')
  .refine(
    (b) => b.byteLength <= MAX_PROBE_SET_BYTES + 4 * 1024 * 1024,
    `an encoded probe set holds at most ${MAX_PROBE_SET_BYTES} bytes of hidden states`,
  )

type Header = Omit<ProbeSet, 'probes'> & { probes: Omit<ProbeSet['probes'][number], 'hidden'>[] }

export function encodeProbeSet(set: ProbeSet): Uint8Array {
  const header: Header = { ...set, probes: set.probes.map(({ hidden: _, ...rest }) => rest) }
  const json = new TextEncoder().encode(JSON.stringify(header))
  const hidden = set.probes.flatMap((p) => p.hidden)
  const out = new Uint8Array(4 + json.byteLength + hidden.reduce((n, h) => n + h.byteLength, 0))
  new DataView(out.buffer).setUint32(0, json.byteLength, true)
  out.set(json, 4)
  let at = 4 + json.byteLength
  for (const h of hidden) {
    out.set(h, at)
    at += h.byteLength
  }
  return out
}

/** The probe set `bytes` encode, checked against its schema; else `bad_probes`, saying what is wrong. */
export function decodeProbeSet(bytes: Uint8Array): ProbeSet {
  const bad = (why: string) =>
    new NeuronError('bad_probes', `the probe set is malformed: ${why}; compute it again with neuron publish.`)
  if (bytes.byteLength < 4) throw bad('shorter than its header length')
  const end = 4 + new DataView(bytes.buffer, bytes.byteOffset, 4).getUint32(0, true)
  if (end > bytes.byteLength) throw bad('its header runs past its end')
  let header: Header
  try {
    header = JSON.parse(new TextDecoder().decode(bytes.subarray(4, end)))
  } catch {
    throw bad('its header is not JSON')
  }
  if (!Number.isInteger(header?.nEmbd) || header.nEmbd <= 0 || !Array.isArray(header.probes))
    throw bad('its header has no width or no probes')
  const per = (v: unknown) => Array.isArray(v) && v.every((x) => Number.isInteger(x) && x >= 0 && x <= MAX_SEAM_VALUES)
  if ((header.widths !== undefined && !per(header.widths)) || (header.sides !== undefined && !per(header.sides)))
    throw bad('its widths or side values are not counts')
  let at = end
  const probes = header.probes.map((p) => {
    const tokens = Array.isArray(p?.tokens) ? p.tokens.length : 0
    const hidden = (Array.isArray(p?.boundaries) ? p.boundaries : []).map((b: unknown) => {
      const { width, side } = probeBoundary(header, Number.isInteger(b) ? (b as number) : 0)
      const n = tokens * (width + side) * 4
      // a copy: aligned for Float32Array views, and free of the message's buffer
      const h = new Uint8Array(bytes.subarray(at, at + n))
      at += n
      return h
    })
    return { ...p, hidden }
  })
  if (at > bytes.byteLength) throw bad(`its header names more hidden states than its ${bytes.byteLength} bytes hold`)
  if (at !== bytes.byteLength) throw bad(`${bytes.byteLength - at} bytes are left over after its hidden states`)
  const parsed = ProbeSet.safeParse({ ...header, probes })
  if (!parsed.success) throw bad(parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; '))
  return parsed.data
}
