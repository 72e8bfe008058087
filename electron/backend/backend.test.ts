import { mkdir, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { SwarmClient } from '../../client/swarm-client'
import { Host } from '../../host/host'
import { NodeIdentity } from '../../identity/keys'
import { type AppEventData, type AppEventName, KV_BUDGET } from '../../protocol'
import { backendCalls } from '../../test/backend-calls'
import { STORIES_260K, scratchDir } from '../../test/models'
import { renderChat } from '../../text/chat-template'
import { escrowAccount, hostAccount } from '../../tracker/ledger/accounts'
import { Tracker } from '../../tracker/server'
import { AppBackend } from './backend'
import { SettingsStore } from './settings-store'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let backend: AppBackend
let extra: Host | undefined
const events: { event: AppEventName; data: unknown; at: number }[] = []
const MODEL = 'stories260k'
const MESSAGES = [{ role: 'user' as const, content: 'Tell me a story about a cat.' }]

const { call, failure } = backendCalls(() => backend)

function seen<E extends AppEventName>(event: E): AppEventData<E>[] {
  return events.filter((e) => e.event === event).map((e) => e.data as AppEventData<E>)
}

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 25))
  }
}

/** The backend's Hosts started and not yet told to stop, from now on (real Hosts, counted as they start and stop). */
function liveHosts(): Set<Host> {
  const live = new Set<Host>()
  const { start, stop } = Host.prototype
  vi.spyOn(Host.prototype, 'start').mockImplementation(function (this: Host) {
    live.add(this)
    return start.call(this)
  })
  vi.spyOn(Host.prototype, 'stop').mockImplementation(function (this: Host, timeoutMs?: number) {
    live.delete(this)
    return stop.call(this, timeoutMs)
  })
  return live
}

async function savedHosting(): Promise<unknown> {
  return (await SettingsStore.open(join(dir, 'app'))).value.hosting
}

async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()))
  const address = server.address()
  await new Promise<void>((r) => server.close(() => r()))
  if (address === null || typeof address === 'string') throw new Error('no port')
  return address.port
}

describe(`the app backend on its embedded swarm`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-app-'))
    const started = performance.now()
    backend = await AppBackend.start({
      dataDir: join(dir, 'app'),
      trackerUrl: null,
      defaultModels: [STORIES_260K],
      threads: 1,
    })
    console.log(
      `backend started (embedded tracker, stories260K packed and published) in ` +
        `${(performance.now() - started).toFixed(0)} ms`,
    )
    backend.onEvent((event, data) => events.push({ event, data, at: performance.now() }))
  })
  afterEach(() => {
    vi.restoreAllMocks()
  })
  afterAll(async () => {
    await extra?.stop(1000)
    await backend?.close()
    await cleanup()
  })

  it('publishes stories260K on its private tracker and lists it, with default settings', async () => {
    const { models } = await call('models.list', {})
    expect(models.map((m) => m.modelId)).toEqual([MODEL])
    expect(models[0]?.nLayer).toBe(5)
    const settings = await call('settings.get', {})
    expect(settings).toMatchObject({
      trackerUrl: null,
      connectedTrackerUrl: backend.trackerUrl,
      hostId: backend.hostId,
    })
    expect(settings.limits).toEqual({ threads: 1, useGpu: true, diskBytes: null, memoryBytes: null })
    const computer = await call('computer.get', {})
    expect(computer.servableBytes).toBeGreaterThan(0)
    expect(computer.summary).toMatch(/^This computer can serve about [\d.]+ GB of layers/)
  })

  it(
    'previews the existing coverage, then hosts the proposed ' + 'range through downloading and loading to serving',
    async () => {
      extra = new Host({
        trackerUrl: backend.trackerUrl,
        dataDir: join(dir, 'extra'),
        modelId: MODEL,
        blocks: [0, 2],
        threads: 1,
      })
      await extra.start()
      const preview = await call('hosting.preview', { modelId: MODEL })
      expect(preview.placement.coverage.map((c) => c.before.hosts)).toEqual([1, 1, 0, 0, 0])
      const proposal = preview.placement.proposal
      if (proposal === null) throw new Error(`no proposal: ${preview.placement.refusal?.reason}`)
      expect(proposal.blocks[1]).toBe(5)
      // The cache each block states in the manifest (stories260K: 128 bytes per token), at the host's KV budget.
      expect([proposal.cacheBytesPerToken, proposal.cacheBytes]).toEqual(
        [128, 128 * KV_BUDGET.tokens].map((x) => x * (proposal.blocks[1] - proposal.blocks[0])),
      )
      // Priced by the tracker: the proposal and every alternative say what they would earn.
      expect(preview.creditsPerHourMicro).toBeGreaterThan(0)
      expect(preview.creditsPerHourMicro).toBe(proposal.hostMicroPerHour)
      for (const alternative of preview.placement.alternatives) expect(alternative.hostMicroPerHour).toBeGreaterThan(0)

      const started = performance.now()
      const status = await call('hosting.start', { modelId: MODEL, blocks: proposal.blocks })
      expect(status).toMatchObject({
        phase: 'downloading',
        modelId: MODEL,
        blocks: proposal.blocks,
        serving: null,
        error: null,
      })
      await until('serving', () => seen('hosting.status').some((s) => s.phase === 'serving'))
      console.log(`hosting.start → serving in ${(performance.now() - started).toFixed(0)} ms`)
      const phases = seen('hosting.status').map((s) => s.phase)
      expect(phases.indexOf('loading')).toBeGreaterThan(phases.indexOf('downloading'))
      expect(phases.indexOf('serving')).toBeGreaterThan(phases.indexOf('loading'))
      // The tracker's known-answer probe of the new range is a session too, closed once answered.
      let serving = await call('hosting.status', {})
      for (let i = 0; i < 200 && serving.serving?.activeSessions !== 0; i++) {
        await new Promise((r) => setTimeout(r, 25))
        serving = await call('hosting.status', {})
      }
      expect(serving.serving).toMatchObject({
        activeSessions: 0,
        servedBlockTokens: 0,
        endpoint: expect.stringMatching(/^ws:\/\/127\.0\.0\.1:/),
      })
      expect(serving.serving?.tokensPerSecond).toBeGreaterThan(0)
      expect(serving.artifacts.length).toBeGreaterThan(0)
      expect(serving.artifacts.every((a) => a.downloadedBytes === a.totalBytes)).toBe(true)
      expect((await failure('hosting.start', { modelId: MODEL, blocks: [0, 5] })).code).toBe('hosting_busy')
    },
  )

  it(
    'streams a chat whose text equals the swarm client’s greedy output, with the route and the charge in ' +
      'chat.done',
    async () => {
      const reference = await SwarmClient.connect(backend.trackerUrl, NodeIdentity.generate())
      let expected = ''
      try {
        const prompt = renderChat(await reference.tokenizer(MODEL), MESSAGES)
        const run = reference.generate({ modelId: MODEL, prompt, maxTokens: 24, stopAtEog: true })
        for (let next = await run.next(); !next.done; next = await run.next()) expected += next.value.text
      } finally {
        reference.close()
      }
      expect(expected.length).toBeGreaterThan(10)

      expect(await call('chat.send', { chatId: 'story-1', modelId: MODEL, messages: MESSAGES, maxTokens: 24 })).toEqual(
        {
          chatId: 'story-1',
        },
      )
      await until(
        'chat.done',
        () => seen('chat.done').some((d) => d.chatId === 'story-1') || seen('chat.error').length > 0,
      )
      expect(seen('chat.error')).toEqual([])
      const text = seen('chat.token')
        .filter((t) => t.chatId === 'story-1')
        .map((t) => t.text)
        .join('')
      expect(text).toBe(expected)
      const done = seen('chat.done').find((d) => d.chatId === 'story-1')
      expect(done?.route.map((h) => h.hostId)).toContain(backend.hostId)
      expect(done?.route.reduce((n, h) => n + h.blocks[1] - h.blocks[0], 0)).toBe(5)
      expect(done?.route.every((h) => h.medianMs !== null && h.medianMs > 0)).toBe(true)
      expect(done?.chargedMicro).toBeGreaterThan(0)
      expect(
        seen('chat.route')
          .find((r) => r.chatId === 'story-1')
          ?.hops.map((h) => h.hostId),
      ).toEqual(done?.route.map((h) => h.hostId))
    },
  )

  it('shows the host’s earnings, equal to the tracker ledger, and pushes them as receipts settle', async () => {
    const tracker = backend.embeddedTracker
    if (tracker === null) throw new Error('not embedded')
    // receipts are handed in as the hosts go: the pushes add up to the ledger once the last is settled
    const pushedSum = () => seen('earnings.receipt').reduce((sum, p) => sum + p.earnedMicro, 0)
    const ledgerSum = async () => {
      const now = await call('earnings.get', {})
      return now.balanceMicro + now.pendingMicro
    }
    await until('the pushes to add up', async () => pushedSum() === (await ledgerSum()), 10_000)
    const earnings = await call('earnings.get', {})
    expect(earnings.pendingMicro).toBeGreaterThan(0) // in escrow for the settlement window (a day by default)
    expect(earnings.pendingMicro).toBe(await tracker.store.ledger.balance(escrowAccount(backend.hostId)))
    expect(earnings.balanceMicro).toBe(await tracker.store.ledger.balance(hostAccount(backend.hostId)))
    expect(earnings.settlementWindowMs).toBe(24 * 3_600_000)
    expect(earnings.servedBlockTokens).toBeGreaterThan(0)
    expect(earnings.recent.length).toBeGreaterThan(0)
    expect(earnings.byHour[0]?.modelId).toBe(MODEL)
    const account = await tracker.accounts.byPublicKey((await call('settings.get', {})).publicKey)
    expect(earnings.account).toEqual({
      accountId: account?.accountId,
      balanceMicro: await tracker.accounts.balance(account?.accountId ?? ''),
    })
    const pushed = seen('earnings.receipt')
    expect(pushed.length).toBeGreaterThan(0)
    expect(pushed.at(-1)).toMatchObject({ balanceMicro: earnings.balanceMicro, pendingMicro: earnings.pendingMicro })
    // Each push says what that receipt earned, the first one too: together, the whole balance (pending and settled) of
    // this new host. (A probe's receipts are verified and pay nothing: those pushes earn 0.)
    expect(pushed.some((p) => p.ok && p.earnedMicro > 0)).toBe(true)
    expect(pushed.every((p) => p.earnedMicro >= 0)).toBe(true)
    await until(
      'served block-tokens in the status',
      () => (backend.hostingStatus.serving?.servedBlockTokens ?? 0) > 0,
      5000,
    )
    expect((await call('reputation.get', {})).hostId).toBe(backend.hostId)
    await until(
      'completed steps in the reputation',
      async () => (await call('reputation.get', {})).completedSteps > 0,
      5000,
    )
  })

  it(
    'makes the embedded swarm private from Settings: a ' + 'stranger is refused at once, the app keeps its dashboards',
    async () => {
      const tracker = backend.embeddedTracker
      if (tracker === null || extra === undefined) throw new Error('not embedded, or no extra host')
      const friend = NodeIdentity.generate()
      const extraKey = tracker.registry.get(extra.hostId)?.publicKey ?? ''
      expect((await failure('settings.update', { allowedKeys: ['not a key'] })).message).toMatch(/public key/)
      expect((await call('settings.update', { allowedKeys: [friend.publicKey, extraKey] })).allowedKeys).toEqual([
        friend.publicKey,
        extraKey,
      ])
      try {
        expect((await SettingsStore.open(join(dir, 'app'))).value.allowedKeys).toEqual([friend.publicKey, extraKey])
        await expect(SwarmClient.connect(backend.trackerUrl, NodeIdentity.generate())).rejects.toMatchObject({
          code: 'not_admitted',
        })
        ;(await SwarmClient.connect(backend.trackerUrl, friend)).close()
        // The app's own key stays admitted: its earnings come from the members-only dashboard, signed.
        expect((await call('earnings.get', {})).pendingMicro).toBeGreaterThan(0)
        expect((await call('models.list', {})).models.map((m) => m.modelId)).toEqual([MODEL])
      } finally {
        await call('settings.update', { allowedKeys: null })
      }
      ;(await SwarmClient.connect(backend.trackerUrl, NodeIdentity.generate())).close()
    },
  )

  it('pauses (artifacts stay) and resumes serving the same range, then stops', async () => {
    const blocks = backend.hostingStatus.blocks
    expect((await call('hosting.pause', {})).phase).toBe('paused')
    events.length = 0
    expect((await call('hosting.resume', {})).blocks).toEqual(blocks)
    await until('serving again', () => seen('hosting.status').some((s) => s.phase === 'serving'))
    expect((await call('hosting.stop', {})).phase).toBe('idle')
    expect((await call('hosting.status', {})).modelId).toBeNull()
  })

  it(
    'runs hosting changes in the order called: two stops and a start at once leave one host, serving what ' +
      'is saved',
    async () => {
      const live = liveHosts()
      await call('hosting.start', { modelId: MODEL, blocks: [2, 5] })
      await until('serving', () => backend.hostingStatus.phase === 'serving')
      const [first, second, started] = await Promise.all([
        call('hosting.stop', {}),
        call('hosting.stop', {}),
        call('hosting.start', { modelId: MODEL, blocks: [1, 5] }),
      ])
      expect([first.phase, second.phase]).toEqual(['idle', 'idle'])
      expect(started).toMatchObject({ phase: 'downloading', blocks: [1, 5] })
      await until('serving again', () => backend.hostingStatus.phase === 'serving')
      expect(backend.hostingStatus).toMatchObject({ modelId: MODEL, blocks: [1, 5] })
      expect(live.size).toBe(1)
      expect(await savedHosting()).toEqual({ modelId: MODEL, blocks: [1, 5], paused: false })
    },
  )

  it('a pause and a start of another range at once: the pause lands first, then the new range serves', async () => {
    const live = liveHosts()
    const [paused, started] = await Promise.all([
      call('hosting.pause', {}),
      call('hosting.start', { modelId: MODEL, blocks: [3, 5] }),
    ])
    expect(paused).toMatchObject({ phase: 'paused', blocks: [1, 5] })
    expect(started).toMatchObject({ phase: 'downloading', blocks: [3, 5] })
    await until('serving the new range', () => backend.hostingStatus.phase === 'serving')
    expect(backend.hostingStatus.blocks).toEqual([3, 5])
    expect(live.size).toBe(1)
    expect(await savedHosting()).toEqual({ modelId: MODEL, blocks: [3, 5], paused: false })
    await call('hosting.stop', {})
  })

  it('stopping while the host starts lets it go: no host stays, and the tracker sees it leave', async () => {
    const tracker = backend.embeddedTracker
    if (tracker === null) throw new Error('not embedded')
    const live = liveHosts()
    expect((await call('hosting.start', { modelId: MODEL, blocks: [0, 5] })).phase).toBe('downloading')
    expect(await call('hosting.stop', {})).toMatchObject({ phase: 'idle', modelId: null, serving: null })
    expect(live.size).toBe(0)
    await until('the host offline', () => tracker.registry.get(backend.hostId)?.online !== true, 5000)
    events.length = 0
    await new Promise((r) => setTimeout(r, 500))
    expect(seen('hosting.status').map((s) => s.phase)).toEqual([])
    expect(await savedHosting()).toBeNull()
  })

  it(
    'refuses a range over the memory limit, hosts on the CPU when GPUs are off, and counts no more than the ' +
      'computer has',
    async () => {
      await call('settings.update', { limits: { memoryBytes: 1000, useGpu: false } })
      const error = await failure('hosting.start', { modelId: MODEL, blocks: [0, 5] })
      expect(error.code).toBe('memory_limit')
      expect(error.message).toMatch(
        new RegExp(
          String.raw`^blocks \[0, 5\) of stories260k need about [\d.]+ (bytes|MB|GB) of memory .* ` +
            String.raw`over this computer's memory limit of 1000 bytes`,
        ),
      )
      expect(backend.hostingStatus.phase).toBe('idle')
      expect(await savedHosting()).toBeNull()

      await call('settings.update', { limits: { memoryBytes: 1e12, diskBytes: 1e15 } })
      const computer = await call('computer.get', {})
      expect(computer.servableBytes).toBeLessThanOrEqual(
        Math.min(computer.profile.memory.availableBytes, computer.profile.disk.freeBytes),
      )

      const live = liveHosts()
      await call('hosting.start', { modelId: MODEL, blocks: [3, 5] })
      expect([...live].map((h) => h.options.device)).toEqual(['cpu'])
      await until('serving on the CPU', () => backend.hostingStatus.phase === 'serving')
      await call('hosting.stop', {})
      await call('settings.update', { limits: { memoryBytes: null, diskBytes: null, useGpu: true } })
    },
  )

  it('changes nothing when the settings cannot be saved, though the new tracker answers', async () => {
    const other = await Tracker.start({ dbPath: join(dir, 'other.sqlite'), host: '127.0.0.1', port: 0 })
    // The store writes a temp file and renames it over settings.json: a folder in its place fails the rename.
    const path = join(dir, 'app', 'settings.json')
    let kept = ''
    const restore = async () => {
      if (!(await stat(path)).isDirectory()) return
      await rm(path, { recursive: true })
      await writeFile(path, kept)
    }
    try {
      await call('hosting.start', { modelId: MODEL, blocks: [2, 5] })
      await until('serving', () => backend.hostingStatus.phase === 'serving')
      const before = await call('settings.get', {})
      kept = await readFile(path, 'utf8')
      await rm(path)
      await mkdir(path)
      await failure('settings.update', { trackerUrl: other.url, limits: { threads: 2 } })
      await restore()
      expect(await call('settings.get', {})).toEqual(before)
      expect(backend.hostingStatus).toMatchObject({ phase: 'serving', blocks: [2, 5] })
      expect((await call('models.list', {})).models.map((m) => m.modelId)).toEqual([MODEL])
      expect(await savedHosting()).toEqual({ modelId: MODEL, blocks: [2, 5], paused: false })
      expect((await readdir(join(dir, 'app'))).filter((f) => f.endsWith('.tmp'))).toEqual([])
    } finally {
      if (kept !== '') await restore()
      await other.close()
    }
  })

  it(
    'a switch of tracker stops hosting and ends a chat saying the connection changed; the same URL with a slash ' +
      'is no switch',
    async () => {
      const other = await Tracker.start({ dbPath: join(dir, 'other-2.sqlite'), host: '127.0.0.1', port: 0 })
      try {
        expect(backend.hostingStatus.phase).toBe('serving')
        await call('chat.send', { chatId: 'switch-1', modelId: MODEL, messages: MESSAGES, maxTokens: 2000 })
        await until(
          'the first token',
          () =>
            seen('chat.token').some((t) => t.chatId === 'switch-1') ||
            seen('chat.error').some((e) => e.chatId === 'switch-1'),
        )
        expect(seen('chat.error').map((e) => e.error.message)).toEqual([])
        const settings = await call('settings.update', { trackerUrl: `${other.url}/` })
        expect(settings).toMatchObject({ trackerUrl: other.url, connectedTrackerUrl: other.url })
        await until(
          'the chat ended',
          () =>
            seen('chat.error').some((e) => e.chatId === 'switch-1') ||
            seen('chat.done').some((d) => d.chatId === 'switch-1'),
        )
        expect(seen('chat.error').find((e) => e.chatId === 'switch-1')?.error).toMatchObject({
          code: 'swarm_changed',
          message: expect.stringMatching(/swarm connection changed/),
        })
        expect(backend.hostingStatus).toMatchObject({ phase: 'idle', modelId: null })
        expect(await savedHosting()).toBeNull()
        // On a remote tracker the app's own account is unknown: no invented id.
        expect((await call('earnings.get', {})).account).toBeNull()
        const url = backend.trackerUrl
        expect(await call('settings.update', { trackerUrl: `${other.url}//` })).toMatchObject({
          connectedTrackerUrl: url,
        })
        expect(backend.trackerUrl).toBe(url)
      } finally {
        await call('settings.update', { trackerUrl: null }).catch(() => {}) // hosts again the range left there
        await call('hosting.stop', {}).catch(() => {})
        await other.close()
      }
    },
  )

  it('refuses a tracker URL where no tracker answers, and changes nothing', async () => {
    const before = await call('settings.get', {})
    const url = `http://127.0.0.1:${await closedPort()}`
    const error = await failure('settings.update', { trackerUrl: url, limits: { threads: 2 } })
    expect(error.code).toBe('tracker_unreachable')
    expect(error.message).toContain(`no Neuron tracker answers at ${url}`)
    expect(await call('settings.get', {})).toEqual(before)
  })

  it('refuses to add a file that is not a GGUF, and lists the same models', async () => {
    const path = join(dir, 'notes.gguf')
    await writeFile(path, 'hello, not a model')
    const error = await failure('models.add', { path })
    expect(error).toMatchObject({
      code: 'not_gguf',
      message: `${path} is not a GGUF file (it starts with "hell"); pick a .gguf model file`,
    })
    expect((await call('models.list', {})).models.map((m) => m.modelId)).toEqual([MODEL])
  })

  it(
    'starts with an empty swarm when the default model is missing, and offers the file dialog only where its ' +
      'adapter has one',
    async () => {
      expect((await call('settings.get', {})).canPickFiles).toBe(false)
      expect(await failure('models.pick', {})).toMatchObject({
        code: 'not_available',
        message: expect.stringMatching(/type the path/),
      })
      const chosen = [join(dir, 'picked.gguf'), null]
      const withDialog = await AppBackend.start({
        dataDir: join(dir, 'dialog'),
        trackerUrl: null,
        defaultModels: [join(dir, 'no-such-model.gguf')],
        threads: 1,
        pickFile: async () => chosen.shift() ?? null,
      })
      try {
        expect(await withDialog.call('models.list', {})).toEqual({ ok: true, value: { models: [] } })
        const settings = await withDialog.call('settings.get', {})
        expect(settings.ok && (settings.value as { canPickFiles: boolean }).canPickFiles).toBe(true)
        expect(await withDialog.call('models.pick', {})).toEqual({
          ok: true,
          value: { path: join(dir, 'picked.gguf') },
        })
        // Cancelled: no path, and no error.
        expect(await withDialog.call('models.pick', {})).toEqual({ ok: true, value: { path: null } })
      } finally {
        await withDialog.close()
      }
    },
  )

  it('answers malformed calls with bad_request and keeps serving', async () => {
    expect((await failure('hosting.start', { modelId: MODEL, blocks: [3, 1] })).code).toBe('bad_request')
    expect((await failure('chat.send', { chatId: 'x', modelId: MODEL, messages: [] })).code).toBe('bad_request')
    expect((await failure('no.such.method', {})).code).toBe('bad_request')
    expect((await failure('settings.update', { limits: { threads: 0 } })).code).toBe('bad_request')
    expect((await failure('identity.import', { pem: 'not a key' })).code).toBe('bad_identity')
    expect((await call('settings.get', {})).limits.threads).toBe(1)
  })
})
