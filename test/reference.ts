// The PyTorch reference (reference/run.py) as tests call it: Debian's python3 with torch, its .npy outputs read
// back, and the tolerance a seam of ours is held to against it.
import { execFile, spawnSync } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { REPO_ROOT } from './models'

export const PYTHON = '/usr/bin/python3'
export const hasTorch = spawnSync(PYTHON, ['-c', 'import torch, numpy'], { stdio: 'ignore' }).status === 0
export const NO_TORCH = hasTorch
  ? ''
  : ` (skipped: ${PYTHON} lacks torch; .ci/run installs python3-torch and python3-numpy)`
/**
 * ‖ours − reference‖ / ‖reference‖ per seam, f32 weights (quantized weights make ggml quantize the
 * activations too). The reference runs attention as llama.cpp's CPU flash attention over an f16 KV
 * cache (--f16-attention): all-f32 attention differs from it by 2e-4 to 6e-4 after a few blocks, and
 * that much can flip a near-tie between two experts.
 */
export const SEAM_TOLERANCE = 1e-3

export type Npy = { shape: number[]; data: Float32Array }

/** A little-endian f32 .npy file, as numpy.save writes it. */
export function readNpy(path: string): Npy {
  const buf = readFileSync(path)
  const headerLen = buf.readUInt8(6) === 1 ? buf.readUInt16LE(8) : buf.readUInt32LE(8)
  const start = buf.readUInt8(6) === 1 ? 10 : 12
  const header = buf.subarray(start, start + headerLen).toString('latin1')
  if (!header.includes("'<f4'") || header.includes("'fortran_order': True"))
    throw new Error(`${path}: expected C-order <f4, got ${header}`)
  const shape = [...(header.match(/'shape': \(([^)]*)\)/)?.[1] ?? '').matchAll(/\d+/g)].map((m) => Number(m[0]))
  const body = buf.subarray(start + headerLen)
  return { shape, data: new Float32Array(body.buffer.slice(body.byteOffset, body.byteOffset + body.length)) }
}

export type Reference = { arch: string; hidden: Npy[]; logits: Npy; routerMargin: number | null }

/** reference/run.py on `artifacts` for `tokens`, its files written under a new directory in `scratch`. */
export function runReference(scratch: string, artifacts: string[], tokens: number[], f16Attention = true): Reference {
  const { out, args } = referenceArgs(scratch, artifacts, tokens, f16Attention)
  const res = spawnSync(PYTHON, args, { encoding: 'utf8', timeout: 300_000 })
  if (res.status !== 0) throw new Error(`reference/run.py failed (${res.status ?? res.signal}): ${res.stderr}`)
  return readReference(out)
}

/**
 * runReference without blocking the event loop: a test's in-process tracker and hosts keep their heartbeats meanwhile.
 */
export async function runReferenceAsync(
  scratch: string,
  artifacts: string[],
  tokens: number[],
  f16Attention = true,
): Promise<Reference> {
  const { out, args } = referenceArgs(scratch, artifacts, tokens, f16Attention)
  await promisify(execFile)(PYTHON, args, { timeout: 300_000 })
  return readReference(out)
}

function referenceArgs(
  scratch: string,
  artifacts: string[],
  tokens: number[],
  f16Attention: boolean,
): { out: string; args: string[] } {
  const out = mkdtempSync(join(scratch, 'ref-'))
  const args = [
    join(REPO_ROOT, 'reference/run.py'),
    '--artifacts',
    ...artifacts,
    '--tokens',
    tokens.join(','),
    '--out',
    out,
  ]
  return { out, args: f16Attention ? [...args, '--f16-attention'] : args }
}

function readReference(out: string): Reference {
  const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as {
    arch: string
    hidden: string[]
    logits: string
    routerMargin: number | null
  }
  return {
    arch: summary.arch,
    hidden: summary.hidden.map((f) => readNpy(join(out, f))),
    logits: readNpy(join(out, summary.logits)),
    routerMargin: summary.routerMargin,
  }
}

/** ‖ours − ref‖ / ‖ref‖; throws when the lengths differ. */
export function relativeError(ours: ArrayLike<number>, ref: ArrayLike<number>): number {
  if (ours.length !== ref.length) throw new Error(`${ours.length} values against the reference's ${ref.length}`)
  let diff = 0
  let norm = 0
  for (let i = 0; i < ref.length; i++) {
    const r = ref[i] as number
    diff += ((ours[i] as number) - r) ** 2
    norm += r * r
  }
  return Math.sqrt(diff / norm)
}
