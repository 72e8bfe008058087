// npm run bench:pack — pack throughput against `cp` of the same file, in the same run.
// Rounds alternate cp and pack; each prints one JSON line with the load average; the last line holds
// the medians and the ratio.
import { spawnSync } from 'node:child_process'
import { mkdtemp, rm, stat } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { packModel } from '../gguf/pack'
import { BENCH_DIR, benchModel } from './models'

const RUNS = 3

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b)
  return s[Math.floor(s.length / 2)] ?? Number.NaN
}

async function timed(fn: () => Promise<void> | void): Promise<number> {
  const started = performance.now()
  await fn()
  return (performance.now() - started) / 1000
}

const source = await benchModel('q8_0')
const bytes = (await stat(source)).size
const work = await mkdtemp(join(BENCH_DIR, 'pack-'))
try {
  // Warm the page cache so both sides read the source from memory.
  spawnSync('cp', [source, join(work, 'warm.gguf')])
  await rm(join(work, 'warm.gguf'))
  const cp: number[] = []
  const pack: number[] = []
  for (let run = 0; run < RUNS; run++) {
    const copy = join(work, `copy-${run}.gguf`)
    const seconds = await timed(() => {
      const r = spawnSync('cp', [source, copy])
      if (r.status !== 0) throw new Error(`cp failed: ${r.stderr}`)
    })
    cp.push(seconds)
    await rm(copy)
    console.log(JSON.stringify({ run, tool: 'cp', seconds, mb_s: bytes / 1e6 / seconds, load_average: loadavg()[0] }))

    const out = join(work, `packed-${run}`)
    const packSeconds = await timed(async () => {
      await packModel({ source, out })
    })
    pack.push(packSeconds)
    await rm(out, { recursive: true })
    console.log(
      JSON.stringify({
        run,
        tool: 'neuron pack',
        seconds: packSeconds,
        mb_s: bytes / 1e6 / packSeconds,
        load_average: loadavg()[0],
      }),
    )
  }
  const cpMbS = bytes / 1e6 / median(cp)
  const packMbS = bytes / 1e6 / median(pack)
  console.log(
    JSON.stringify({
      bench: 'pack',
      model: source,
      model_bytes: bytes,
      runs: RUNS,
      cp_mb_s: cpMbS,
      pack_mb_s: packMbS,
      pack_vs_cp_ratio: packMbS / cpMbS,
      load_average: loadavg()[0],
    }),
  )
} finally {
  await rm(work, { recursive: true, force: true })
}
