import {
  copyFileSync,
  existsSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  statfsSync,
  statSync,
  truncateSync,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { generateModel } from '../gguf/generate'
import { logitsOf, STORIES, THREADS } from '../test/native'
import { ShardRuntimeError } from './errors'
import { ShardRuntime } from './shard-runtime'

const dir = mkdtempSync(join(tmpdir(), 'neuron-mmap-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

const PROMPT = Int32Array.of(1, 303, 307, 261, 378, 16, 312, 270)

function load(path: string, blocks: number, mmap: boolean, hugePages = true): Promise<ShardRuntime> {
  return ShardRuntime.load({
    artifacts: [path],
    blocks: [0, blocks],
    embed: true,
    head: true,
    threads: THREADS,
    device: 'cpu',
    mmap,
    hugePages,
  })
}

/**
 * Why this machine cannot map files with 2 MB pages, if it
 * cannot: Linux, THP not `never`, a filesystem with large folios.
 */
function hugePagesMissing(): string | undefined {
  const thp = '/sys/kernel/mm/transparent_hugepage/enabled'
  if (!existsSync(thp)) return 'skipped: no transparent huge pages (not Linux, or a kernel without them)'
  if (readFileSync(thp, 'utf8').includes('[never]')) return 'skipped: transparent huge pages are switched to never'
  // ext4, xfs and btrfs keep file pages in large folios on Linux 6.x; tmpfs only with shmem_enabled
  const kind = statfsSync(dir).type
  if (![0xef53, 0x58465342, 0x9123683e].includes(kind))
    return `skipped: the temp dir's filesystem (0x${kind.toString(16)}) is not ext4, xfs or btrfs`
  return undefined
}

/** Every position's logits of a prefill, then of one decode step: what the user's tokens come from. */
async function logits(rt: ShardRuntime): Promise<Float32Array[]> {
  const session = rt.openSession({ maxTokens: 64 })
  try {
    const prefill = logitsOf(await session.forward(PROMPT, { allLogits: true }))
    const { token } = session.sample({ temperature: 0 })
    const decode = logitsOf(await session.forward(Int32Array.of(token)))
    return [prefill, decode]
  } finally {
    session.close()
  }
}

describe(`weights mapped from the artifact file`, () => {
  it('stories260K (f32): mapped and read-in runtimes give identical logits; the mapping is reported', async () => {
    const mapped = await load(STORIES, 5, true)
    const copied = await load(STORIES, 5, false)
    try {
      expect(await logits(mapped)).toEqual(await logits(copied))
      // f32 weights are never repacked: every byte is used in place, none copied
      const m = mapped.info()
      expect(m.mappedBytes).toBeGreaterThan(0)
      expect(m.weightBuffers).toEqual({ CPU_Mapped: m.mappedBytes })
      expect(m.mappedBytes).toBeLessThanOrEqual(statSync(STORIES).size)
      expect(copied.info().mappedBytes).toBe(0)
      expect(copied.info().weightBuffers.CPU_Mapped).toBeUndefined()
    } finally {
      mapped.dispose()
      copied.dispose()
    }
  })

  it(
    'a mapped artifact deleted and rewritten under the ' + 'runtime (a re-download) does not change its logits',
    async () => {
      const path = join(dir, 'stories-replaced.gguf')
      copyFileSync(STORIES, path)
      const rt = await load(path, 5, true)
      try {
        const before = await logits(rt)
        const bytes = readFileSync(path)
        rmSync(path)
        writeFileSync(
          path,
          bytes.map((b) => b ^ 0xff),
        )
        expect(await logits(rt)).toEqual(before)
      } finally {
        rt.dispose()
      }
    },
  )

  it('a truncated artifact is refused with the same typed error with mmap on or off', async () => {
    const path = join(dir, 'stories-truncated.gguf')
    copyFileSync(STORIES, path)
    truncateSync(path, statSync(path).size - 4096)
    const codes: string[] = []
    for (const mmap of [true, false]) {
      const err = await load(path, 5, mmap).then(
        (rt) => {
          rt.dispose()
          return undefined
        },
        (e: unknown) => e,
      )
      expect(err).toBeInstanceOf(ShardRuntimeError)
      codes.push((err as ShardRuntimeError).code)
    }
    expect(codes[0]).toMatch(/^ARTIFACT_/)
    expect(codes[0]).toBe(codes[1])
    console.log(`truncated artifact: ${codes.join(', ')}`)
  })
})

describe('weights mapped next to repacked ones', () => {
  it('llama q4_0: identical logits with mmap on and off; what is not repacked is mapped', async () => {
    const path = join(dir, 'llama-q4_0.gguf')
    await generateModel({
      arch: 'llama',
      type: 'q4_0',
      blocks: 2,
      embd: 128,
      heads: 4,
      kvHeads: 2,
      ff: 256,
      vocab: 384,
      seed: 3,
      out: path,
    })
    const mapped = await load(path, 2, true)
    const copied = await load(path, 2, false)
    try {
      expect(await logits(mapped)).toEqual(await logits(copied))
      const m = mapped.info()
      const c = copied.info()
      // the same tensors are repacked either way (on CPUs with a repacking buffer type for q4_0: AVX2, ARM dotprod)
      expect(m.weightBuffers.CPU_REPACK).toBe(c.weightBuffers.CPU_REPACK)
      // the embedding and the norms at least stay in the file's layout
      expect(m.mappedBytes).toBeGreaterThanOrEqual(384 * 128 * (18 / 32))
      expect(c.mappedBytes).toBe(0)
      console.log(
        `llama q4_0 weight buffers, mapped: ${JSON.stringify(m.weightBuffers)}; read in: ` +
          `${JSON.stringify(c.weightBuffers)}`,
      )
    } finally {
      mapped.dispose()
      copied.dispose()
    }
  })
})

const NO_HUGE_PAGES = hugePagesMissing()

describe.skipIf(NO_HUGE_PAGES)(`weights in 2 MB pages ${NO_HUGE_PAGES ?? ''}`, () => {
  it(
    'a freshly written artifact (small page-cache folios) is mapped in 2 MB pages, and weights read in get them ' +
      'too, with the logits of 4 KB pages',
    async () => {
      // ~20 MB of q8_0, as a re-downloaded or just-verified artifact: written, so cached in small folios
      const path = join(dir, 'llama-q8_0-huge.gguf')
      await generateModel({
        arch: 'llama',
        type: 'q8_0',
        blocks: 4,
        embd: 512,
        heads: 8,
        kvHeads: 4,
        ff: 1536,
        vocab: 4096,
        seed: 5,
        out: path,
      })
      const small = join(dir, 'llama-q8_0-small.gguf')
      copyFileSync(path, small)
      const huge = await load(path, 4, true)
      const plain = await load(small, 4, true, false)
      // read into memory instead (mmap off): ggml's buffer, anonymous pages
      const read = await load(path, 4, false)
      try {
        const h = huge.info()
        // most of it: the stretches at either end of the span that are not whole 2 MB pages stay in 4 KB ones
        expect(h.hugePageBytes).toBeGreaterThan(h.mappedBytes / 2)
        expect(plain.info().hugePageBytes).toBe(0)
        expect(read.info().hugePageBytes).toBeGreaterThan(read.info().weightBytes / 2)
        const expected = await logits(plain)
        expect(await logits(huge)).toEqual(expected)
        expect(await logits(read)).toEqual(expected)
        console.log(
          `2 MB pages: ${h.hugePageBytes} of ${h.mappedBytes} mapped bytes; ${read.info().hugePageBytes} of ` +
            `${read.info().weightBytes} read in`,
        )
      } finally {
        huge.dispose()
        plain.dispose()
        read.dispose()
      }
    },
  )
})
