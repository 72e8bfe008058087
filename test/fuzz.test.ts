// A tracker and two hosts, each a real process, face 10 000 hostile messages: mutated and unknown
// Socket.IO events with and without valid auth, raw Socket.IO packets, and mutated data-plane frames.
// Afterwards both programs must still run, within a memory bound, and a greedy generation through
// them must give the same tokens as before. Inputs come from a seeded PRNG: the seed is printed, and
// NEURON_FUZZ_SEED=<seed> replays the same inputs.
import { randomInt } from 'node:crypto'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { WAIT_FOR_SESSION_MS, whenSessionFree } from '../client/free-session'
import { SwarmClient } from '../client/swarm-client'
import { packModel } from '../gguf/pack'
import { tokenizerGguf } from '../gguf/tokenizer'
import { NodeIdentity } from '../identity/keys'
import {
  ClientToTracker,
  callRpc,
  decodeFrame,
  type HardwareProfile,
  HostToTracker,
  type Manifest,
  Receipt,
  readTrailer,
} from '../protocol'
import { Barrage } from './fuzz-barrage'
import { ANSWER_MS, AuthenticatedPool, FrameConnection, hopFrames } from './fuzz-harness'
import { clientEventPayloads, hostEventPayloads, sessionId } from './fuzz-payloads'
import { generateAll } from './generations'
import { seededRng } from './hostile-inputs'
import { STORIES_260K, scratchDir } from './models'
import { readyState, TEST_PROFILE } from './peers'
import { type NeuronProcess, ProcessSwarm, rssMiB, settledRss } from './processes'
import { createModelTorrent } from './programs'

const EVENTS = 10_000
/**
 * A bound on the barrage, so a stalled program cannot hang the suite: it took 15 to 45 s on a busy 2-core
 * machine, and over 90 s at a load average of 17 (CI beside other work), so the bound is generous.
 */
const FUZZ_DEADLINE_MS = 300_000
/** Messages in flight at once. */
const CONCURRENCY = 16
/**
 * RSS a program may gain over the barrage. Every message is parsed and dropped, so a program that
 * keeps nothing per message stays near its warmed-up size. It is not zero because V8 keeps the
 * larger heap it grew for bursts of megabyte messages (16 in flight, each parsed into objects several
 * times its size): the tracker gained about 120 MiB after 10 000 messages and the same after 25 000,
 * a plateau, not a slope. A leak of 20 KiB per message (10 000 × 20 KiB ≈ 195 MiB) breaks it, and so
 * does a KV cache or frame kept per hostile message.
 */
const RSS_GROWTH_BOUND_MIB = 192
/** How long a process may take to give back what the barrage grew, ms (V8's memory reducer runs once it idles). */
const SETTLE_MS = 60_000
const SEED = process.env.NEURON_FUZZ_SEED ? Number(process.env.NEURON_FUZZ_SEED) : randomInt(2 ** 31)
const PROMPT = 'Once upon a time'

/** A host's profile with a GPU and CPU flags, so mutations reach those arrays too. */
const PROFILE: HardwareProfile = {
  ...TEST_PROFILE,
  cpu: { ...TEST_PROFILE.cpu, flags: ['avx2', 'sse4_2'] },
  gpus: [{ vendor: 'NVIDIA', model: 'fuzz gpu', vramBytes: 8e9 }],
}

let dir = ''
let trackerUrl = ''
let cleanup: () => Promise<void> = async () => {}
let swarm: ProcessSwarm | undefined
let tracker: NeuronProcess
let hostProcesses: NeuronProcess[] = []
let manifest: Manifest
let client: SwarmClient

const alive = (p: NeuronProcess) => p.child.exitCode === null && p.child.signalCode === null

async function greedyTokens(): Promise<number[]> {
  const request = {
    modelId: manifest.modelId,
    prompt: PROMPT,
    maxTokens: 24,
    sampling: { temperature: 0 },
    stopAtEog: false,
  }
  return (await generateAll(client, request)).tokens
}

describe(`a tracker and hosts under 10 000 hostile messages`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-fuzz-'))
    manifest = await packModel({ source: STORIES_260K, out: join(dir, 'packed'), blocksPerArtifact: 1 })
    const s = await ProcessSwarm.start(dir, manifest.modelId, [
      '--new-key-grant-micro',
      String(1e12),
      '--new-accounts-per-minute',
      '1000',
    ])
    ;[swarm, trackerUrl, tracker] = [s, s.trackerUrl, s.processes[0] as NeuronProcess]
    hostProcesses = await Promise.all(['0:2', '2:5'].map((blocks, i) => s.startHost(`host-${i}`, blocks)))
    client = await SwarmClient.connect(trackerUrl, NodeIdentity.generate())
  }, 180_000)
  afterAll(async () => {
    client?.close()
    await swarm?.stop()
    await cleanup()
  })

  it('stays up, within its memory bound, and generates the same tokens after 10 000 fuzzed events and ' +
    'frames', async () => {
    console.log(`fuzz seed ${SEED} (replay with NEURON_FUZZ_SEED=${SEED})`)
    const before = await greedyTokens()
    expect(before).toHaveLength(24)

    // Valid payloads to mutate, made by the parties that would send them.
    const fuzzer = NodeIdentity.generate()
    const clients = new AuthenticatedPool(trackerUrl, '/clients', fuzzer)
    const state = readyState(manifest.modelId, [0, 2])
    const hostPools = [0, 1, 2].map(
      () =>
        new AuthenticatedPool(trackerUrl, '/hosts', NodeIdentity.generate(), (s) =>
          callRpc(s, HostToTracker, 'host.hello', { profile: PROFILE, state }).then(() => {}),
        ),
    )
    const seedRng = seededRng(SEED)
    const routed = await Promise.all(
      [0, 1, 2].map(async () => {
        const session = sessionId(seedRng)
        // waits as clients do: the tracker's count lags the hosts' by a heartbeat (a host seemed full once in CI)
        const body = { modelId: manifest.modelId, maxTokens: 64, promptTokens: 3, session }
        const plan = async () => callRpc(await clients.get(), ClientToTracker, 'route.plan', body)
        const route = await whenSessionFree(plan, WAIT_FOR_SESSION_MS)
        expect(route.hops).toHaveLength(2)
        return route.hops.map((hop, i) => hopFrames(manifest, fuzzer, hop, session, 64, i === route.hops.length - 1))
      }),
    )
    const hostIds = routed[0]?.map((h) => h.hostId) ?? []
    const endpoints = new Map(
      (await callRpc(await clients.get(), ClientToTracker, 'hosts.list', {})).hosts.map((h) => [
        h.hostId,
        h.state.endpoint ?? '',
      ]),
    )
    // Per host: a connection that owns the fuzz's sessions (only mutations of valid frames), and one for rough input.
    const owners = new Map(hostIds.map((id) => [id, new FrameConnection(endpoints.get(id) ?? '')]))
    const roughs = new Map(hostIds.map((id) => [id, new FrameConnection(endpoints.get(id) ?? '')]))
    const hops = routed.flat()
    // A real receipt of the fuzzer's own session, from a valid open and forward on the first hop.
    const firstHop = routed[0]?.[0]
    if (firstHop === undefined) throw new Error('no route')
    await owners.get(firstHop.hostId)?.exchange(Buffer.from(firstHop.open.frame))
    const answered = await owners.get(firstHop.hostId)?.exchange(Buffer.from(firstHop.forward))
    const receipt = answered instanceof Buffer ? readTrailer(decodeFrame(answered), Receipt) : undefined
    expect(receipt).toBeDefined()

    const packed = join(dir, 'packed')
    const fuzzModel = { ...manifest, modelId: 'fuzz-model' }
    const torrent = await createModelTorrent(packed, fuzzModel, [`${trackerUrl}/announce`])
    const tokenizer = await tokenizerGguf(join(packed, 'head.gguf'))
    await callRpc(await clients.get(), ClientToTracker, 'model.publish', {
      manifest: fuzzModel,
      torrent,
      tokenizer,
    }).catch(() => undefined)
    const sources = {
      manifest,
      fuzzModel,
      torrent,
      tokenizer,
      profile: PROFILE,
      state,
      routed,
      hostIds,
      firstHop,
      receipt,
    }
    const clientPayloads = clientEventPayloads(sources)
    const hostPayloads = hostEventPayloads(sources)
    // Every event of the protocol has a valid payload to start from.
    expect(Object.keys(clientPayloads).sort()).toEqual(Object.keys(ClientToTracker).sort())
    expect(Object.keys(hostPayloads).sort()).toEqual(Object.keys(HostToTracker).sort())

    const barrage = new Barrage({
      seed: SEED,
      trackerUrl,
      clients,
      hostPools,
      clientPayloads,
      hostPayloads,
      hops,
      hostIds,
      owners,
      roughs,
    })
    const { findings, sent } = barrage
    const rssBefore = { tracker: rssMiB(tracker), hosts: hostProcesses.map(rssMiB) }

    const started = Date.now()
    let next = 0
    let done = 0
    await Promise.all(
      Array.from({ length: CONCURRENCY }, async () => {
        // Stops early when a program has died: the checks below then say which, with its last output.
        while (next < EVENTS && Date.now() - started < FUZZ_DEADLINE_MS && [tracker, ...hostProcesses].every(alive)) {
          const i = next++
          let timer: NodeJS.Timeout | undefined
          const stuck = new Promise<void>((resolve) => {
            timer = setTimeout(
              () => resolve(findings.add(`message ${i}: no outcome within ${2 * ANSWER_MS} ms`)),
              2 * ANSWER_MS,
            )
          })
          await Promise.race([barrage.send(i), stuck])
            .catch((error: unknown) =>
              findings.add(
                `message ${i}: the fuzzer failed to send it: ${error instanceof Error ? error.message : error}`,
              ),
            )
            .finally(() => clearTimeout(timer))
          done++
        }
      }),
    )
    const fuzzMs = Date.now() - started
    for (const p of [tracker, ...hostProcesses]) {
      const exit = p.child.exitCode ?? p.child.signalCode
      expect(
        alive(p),
        `seed ${SEED}: neuron ${p.child.spawnargs[2]} exited (${exit}) under the fuzz:\n${p.output().slice(-3000)}`,
      ).toBe(true)
    }

    // The fuzz's own sessions closed, by the connection that opened them and through the relay.
    const relay = await clients.get()
    for (const hop of hops) {
      await owners.get(hop.hostId)?.exchange(Buffer.from(hop.close))
      await callRpc(relay, ClientToTracker, 'relay.forward', { hostId: hop.hostId, frame: hop.close }).catch(
        () => undefined,
      )
    }
    for (const c of [...owners.values(), ...roughs.values()]) await c.close()
    await clients.close()
    for (const p of hostPools) await p.close()

    // up to a minute each, at once: seed 514962806 left the tracker at 426 MiB 20 s after the barrage in one run and at
    // 274 in the next (the memory reducer's timing, not a leak: a leak stays)
    const [trackerAfter, ...hostsAfter] = await Promise.all(
      [tracker, ...hostProcesses].map((p, i) =>
        settledRss(p, i === 0 ? rssBefore.tracker : (rssBefore.hosts[i - 1] ?? 0), RSS_GROWTH_BOUND_MIB, SETTLE_MS),
      ),
    )
    const rssAfter = { tracker: trackerAfter ?? 0, hosts: hostsAfter }
    console.log(
      JSON.stringify({
        seed: SEED,
        messages: done,
        byKind: Object.fromEntries(sent),
        fuzzMs,
        answers: Object.fromEntries([...findings.codes].sort((a, b) => b[1] - a[1])),
        rssMiB: { before: rssBefore, after: rssAfter, boundGrowth: RSS_GROWTH_BOUND_MIB },
      }),
    )
    expect(findings.problems, `seed ${SEED}`).toEqual([])
    expect(done, `seed ${SEED}: sent ${done} of ${EVENTS} within ${FUZZ_DEADLINE_MS} ms`).toBe(EVENTS)
    expect((await fetch(`${trackerUrl}/health`)).status).toBe(200)
    expect(
      rssAfter.tracker - rssBefore.tracker,
      `seed ${SEED}: tracker RSS ${rssBefore.tracker} → ${rssAfter.tracker} MiB`,
    ).toBeLessThan(RSS_GROWTH_BOUND_MIB)
    for (const [h, mib] of rssAfter.hosts.entries()) {
      expect(
        mib - (rssBefore.hosts[h] ?? 0),
        `seed ${SEED}: host ${h} RSS ${rssBefore.hosts[h]} → ${mib} MiB`,
      ).toBeLessThan(RSS_GROWTH_BOUND_MIB)
    }
    expect(await greedyTokens(), `seed ${SEED}`).toEqual(before)
  }, 480_000)
})
