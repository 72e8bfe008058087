// npm run bench:torrent-wan [-- --rounds 3 --blocks 4 --rates 100,1000 --delay-ms 5] — bench:torrent across NATs,
// on the namespace network (test/network; root): the tracker in the cloud (`neuron tracker --host 0.0.0.0`), two
// seeding `neuron publish` processes on the laptop (on the internet side, where any peer reaches them), and the
// leecher in home A behind its NAT router, whose link the userspace shaper limits to each --rates value (Mbit/s,
// both ways, with --delay-ms each way). First the shaper's own capacity (a bulk TCP copy laptop -> home A, no rate
// set), then per rate: the link's own carry (the same copy at that rate), and rounds alternating aria2c (the
// baseline; the manifest's sha256 read back after it, as bench:torrent) and ours (bench/torrent-fetch.ts, the
// fetch a host does, as a child in home A; --cpu-prof DIR profiles it), the order reversed every other round. Each
// round prints one JSON line with the load average; the last line holds the medians and the ratios. Every process here
// (seeders, shaper, leecher) shares this machine's cores.
import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { packModel } from '../gguf/pack'
import { createModelTorrent } from '../host/artifacts/model-torrent'
import { verifyArtifact } from '../host/artifacts/verify-artifact'
import { readManifest } from '../host/publish'
import { NodeIdentity } from '../identity/keys'
import { REPO_ROOT } from '../test/models'
import { buildHomeNetwork, type HomeNetwork, type Place, whyNoNamespaces } from '../test/network'
import { type NeuronProcess, watchProcess } from '../test/processes'
import { aria2cDownload, HAVE_ARIA2C } from './aria2c'
import { measured, median, timed } from './cpu-use'
import { BENCH_DIR, benchModel, LLAMA_1B } from './models'

const { values } = parseArgs({
  options: {
    rounds: { type: 'string', default: '3' },
    blocks: { type: 'string', default: '4' },
    rates: { type: 'string', default: '100,1000' },
    'delay-ms': { type: 'string', default: '5' },
    /** Write a CPU profile of each of our leecher's fetches into this folder (node --cpu-prof). */
    'cpu-prof': { type: 'string' },
  },
})
const ROUNDS = Number(values.rounds)
const BLOCKS = Number(values.blocks)
const RATES = values.rates.split(',').map(Number)
const DELAY_MS = Number(values['delay-ms'])
if (!Number.isInteger(ROUNDS) || ROUNDS < 1)
  throw new Error(`--rounds takes a whole number of at least 1, got ${values.rounds}`)
if (!Number.isInteger(BLOCKS) || BLOCKS < 1)
  throw new Error(`--blocks takes a whole number of at least 1, got ${values.blocks}`)
if (!RATES.every((r) => r > 0)) throw new Error(`--rates takes Mbit/s above 0, comma-separated, got ${values.rates}`)
const why = whyNoNamespaces() ?? (HAVE_ARIA2C ? undefined : 'aria2c is not installed (apt-get install aria2 time)')
if (why !== undefined) throw new Error(`bench:torrent-wan cannot run: ${why}`)

const PROFILE = values['cpu-prof'] === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${values['cpu-prof']}`]
const TRACKER_PORT = 7070
const BULK_PORT = 5201

/** Copies `bytes` over TCP from `from` to `to` (a throwaway server and client, one stream); resolves MB/s. */
async function bulkMbS(net: HomeNetwork, from: Place, to: Place, bytes: number): Promise<number> {
  const server = `const b = Buffer.alloc(1 << 16)
require('node:net').createServer((s) => {
  let n = ${bytes}
  const w = () => { while (n > 0) { n -= b.length; if (!s.write(b)) return s.once('drain', w) } s.end() }
  w()
})
  .listen(${BULK_PORT}, '0.0.0.0', () => console.log('listening'))`
  const sender = watchProcess(
    net.spawnIn(from, process.execPath, ['-e', server], { stdio: ['ignore', 'pipe', 'pipe'] }),
    `bulk sender in ${from}`,
  )
  try {
    await sender.waitFor(/listening/, 10_000)
    const client = `const t = performance.now(); let n = 0
const s = require('node:net').connect(${BULK_PORT}, ${JSON.stringify(net.addresses[from])})
s.on('data', (d) => { n += d.length }); s.on('end', () => console.log(n / 1e6 / ((performance.now() - t) / 1000)))`
    return Number(await net.exec(to, [process.execPath, '-e', client]))
  } finally {
    await sender.stop()
  }
}

/**
 * The number of seeders the tracker counts for `infoHash`, asked from
 * the laptop (the tracker is reachable only on the namespace network).
 */
async function seedersOf(net: HomeNetwork, trackerUrl: string, infoHash: string): Promise<number> {
  const query = [...Buffer.from(infoHash, 'hex')].map((b) => `%${b.toString(16).padStart(2, '0')}`).join('')
  const asker =
    `fetch(${JSON.stringify(`${trackerUrl}/scrape?info_hash=${query}`)}).then((r) => ` +
    `r.arrayBuffer()).then((b) => console.log(Buffer.from(b).toString('latin1')))`
  const body = await net.exec('laptop', [process.execPath, '-e', asker])
  return Number(/8:completei(\d+)e/.exec(body)?.[1] ?? 0)
}

const source = await benchModel('q8_0', { ...LLAMA_1B, blocks: BLOCKS })
const packed = join(BENCH_DIR, BLOCKS === LLAMA_1B.blocks ? 'packed-llama-1b-q8_0' : `packed-llama-${BLOCKS}x2048-q8_0`)
if (!existsSync(packed)) await packModel({ source, out: packed, blocksPerArtifact: 1 })
const manifest = await readManifest(packed)
const bytes = manifest.artifacts.reduce((s, a) => s + a.bytes, 0)
const mb = bytes / 1e6
const gb = bytes / 1e9
const work = await mkdtemp(join(BENCH_DIR, 'torrent-wan-'))
const net = await buildHomeNetwork({ upnp: false, links: { a: { delayMs: DELAY_MS } } })
const processes: NeuronProcess[] = []
const neuronIn = (place: Place, args: string[]) => {
  const child = net.spawnIn(place, process.execPath, [join(REPO_ROOT, 'bin/neuron.js'), ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  const p = watchProcess(child, `neuron ${args[0]} in ${place}`)
  processes.push(p)
  return p
}
try {
  const shaperMbS = await bulkMbS(net, 'laptop', 'hostA', 500e6)
  console.log(JSON.stringify({ shaper_unlimited_mb_s: shaperMbS, delay_ms: DELAY_MS, load_average: loadavg()[0] }))

  const trackerUrl = `http://${net.addresses.cloud}:${TRACKER_PORT}`
  const tracker = neuronIn('cloud', [
    'tracker',
    '--host',
    '0.0.0.0',
    '--port',
    String(TRACKER_PORT),
    '--db',
    join(work, 'tracker.sqlite'),
  ])
  await tracker.waitFor(/tracker listening on/, 60_000)
  const torrentFile = join(work, 'model.torrent')
  await writeFile(torrentFile, await createModelTorrent(packed, manifest, [`${trackerUrl}/announce`]))
  // Two seeding hosts on the laptop, one key (as bench:torrent: a model is republished only by its publisher).
  await NodeIdentity.loadOrCreate(join(work, 'seeder-a'))
  await mkdir(join(work, 'seeder-b'))
  await copyFile(join(work, 'seeder-a', 'identity.pem'), join(work, 'seeder-b', 'identity.pem'))
  let infoHash = ''
  for (const name of ['seeder-a', 'seeder-b']) {
    const seeder = neuronIn('laptop', ['publish', packed, '--tracker', trackerUrl, '--data-dir', join(work, name)])
    infoHash = (await seeder.waitFor(/infohash ([0-9a-f]{40})/, 300_000))[1] ?? ''
  }
  for (const deadline = Date.now() + 60_000; (await seedersOf(net, trackerUrl, infoHash)) < 2; ) {
    if (Date.now() > deadline) throw new Error('the tracker in the cloud counted fewer than 2 seeders within 60 s')
    await new Promise((resolve) => setTimeout(resolve, 500))
  }
  spawnSync(
    'cat',
    manifest.artifacts.map((a) => join(packed, a.file)),
    { stdio: 'ignore' },
  )

  const sides: Record<string, () => Promise<Record<string, number>>> = {
    'aria2c in home A': async () => {
      const out = join(work, 'aria-leecher')
      let cpuSeconds = Number.NaN
      const seconds = await timed(async () => {
        cpuSeconds = (
          await aria2cDownload(torrentFile, out, 600_000, {
            prefix: ['ip', 'netns', 'exec', net.namespaces.hostA],
            anyInterface: true,
          })
        ).cpuSeconds
      })
      const sha256 = await measured(async () => {
        for (const a of manifest.artifacts) await verifyArtifact(join(out, manifest.modelId, a.file), a)
      })
      await rm(out, { recursive: true, force: true })
      return {
        seconds,
        cpu_s: cpuSeconds,
        checked_seconds: seconds + sha256.seconds,
        checked_cpu_s: cpuSeconds + sha256.cpu_s,
      }
    },
    'ours in home A': async () => {
      const script = join(REPO_ROOT, 'bench/torrent-fetch.ts')
      const dataDir = join(work, 'leecher')
      const child = net.spawnIn(
        'hostA',
        process.execPath,
        [...PROFILE, '--import', 'tsx', script, packed, torrentFile, dataDir],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      )
      const fetcher = watchProcess(child, 'our leecher in home A')
      const line = (await fetcher.waitFor(/^\{"seconds".*$/m, 600_000))[0]
      const exited = new Promise((resolve) =>
        child.exitCode === null ? child.once('exit', resolve) : resolve(undefined),
      )
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 10_000))])
      await fetcher.stop()
      // Never let the next round find these files on disk (a stopped child may not have removed them).
      await rm(dataDir, { recursive: true, force: true })
      const m = JSON.parse(line) as Record<string, number>
      if (!((m.peers ?? 0) > 0))
        throw new Error(`our leecher fetched from no peer (were the files already on disk?): ${line}`)
      return m
    },
  }

  const summary: Record<string, unknown>[] = []
  for (const rate of RATES) {
    await net.setLink('a', { delayMs: DELAY_MS, rateMbit: rate })
    const linkMbS = await bulkMbS(net, 'laptop', 'hostA', Math.min(500e6, rate * 1e6))
    console.log(JSON.stringify({ rate_mbit: rate, link_mb_s: linkMbS, load_average: loadavg()[0] }))
    const results: Record<string, Record<string, number>[]> = Object.fromEntries(Object.keys(sides).map((s) => [s, []]))
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? Object.keys(sides) : Object.keys(sides).reverse()
      for (const tool of order) {
        const m = await (sides[tool] as () => Promise<Record<string, number>>)()
        results[tool]?.push(m)
        const perGb = Object.fromEntries(
          Object.entries(m)
            .filter(([k]) => k.endsWith('cpu_s'))
            .map(([k, v]) => [`${k}_per_gb`, v / gb]),
        )
        console.log(
          JSON.stringify({
            rate_mbit: rate,
            round,
            tool,
            ...m,
            ...perGb,
            mb_s: mb / (m.seconds ?? Number.NaN),
            load_average: loadavg()[0],
          }),
        )
      }
    }
    const medianOf = (tool: string, key = 'seconds') => median((results[tool] ?? []).map((m) => m[key] ?? Number.NaN))
    const ours = medianOf('ours in home A')
    const aria = medianOf('aria2c in home A')
    const oursCpu = medianOf('ours in home A', 'cpu_s') / gb
    const ariaChecked = medianOf('aria2c in home A', 'checked_cpu_s') / gb
    summary.push({
      rate_mbit: rate,
      link_mb_s: linkMbS,
      torrent_mb_s: mb / ours,
      torrent_cpu_s_per_gb: oursCpu,
      torrent_main_thread_cpu_s_per_gb: medianOf('ours in home A', 'main_thread_cpu_s') / gb,
      aria2c_mb_s: mb / aria,
      aria2c_cpu_s_per_gb: medianOf('aria2c in home A', 'cpu_s') / gb,
      aria2c_sha256_checked_cpu_s_per_gb: ariaChecked,
      // Above 1, ours is faster than aria2c / costs more CPU than aria2c with the same sha256 check.
      torrent_vs_aria2c_speed_ratio: aria / ours,
      torrent_vs_aria2c_checked_cpu_ratio: oursCpu / ariaChecked,
      torrent_vs_link_ratio: mb / ours / linkMbS,
    })
  }
  console.log(
    JSON.stringify({
      bench: 'torrent-wan',
      bytes,
      seeders: 2,
      rounds: ROUNDS,
      delay_ms: DELAY_MS,
      shaper_unlimited_mb_s: shaperMbS,
      rates: summary,
      load_average: loadavg()[0],
    }),
  )
} finally {
  await Promise.all(processes.map((p) => p.stop()))
  await net.close()
  await rm(work, { recursive: true, force: true })
}
