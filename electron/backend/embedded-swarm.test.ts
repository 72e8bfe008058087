// The app backend on its embedded swarm, as a volunteer first uses it: the default model published, a range hosted
// beside another host, a chat through both, its earnings, and the swarm made private.
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import { SwarmClient } from '../../client/swarm-client'
import { Host } from '../../host/host'
import { NodeIdentity } from '../../identity/keys'
import { KV_BUDGET } from '../../protocol'
import { backendCalls } from '../../test/backend-calls'
import { type RecordedEvent, seenIn, startEmbeddedBackend, until } from '../../test/embedded-backend'
import { scratchDir } from '../../test/models'
import { renderChat } from '../../text/chat-template'
import { escrowAccount, hostAccount } from '../../tracker/ledger/accounts'
import type { AppBackend } from './backend'
import { SettingsStore } from './settings-store'

let dir = ''
let cleanup: () => Promise<void> = async () => {}
let backend: AppBackend
const events: RecordedEvent[] = []
const MODEL = 'stories260k'
let extra: Host | undefined
const MESSAGES = [{ role: 'user' as const, content: 'Tell me a story about a cat.' }]
const { call, failure } = backendCalls(() => backend)
const seen = seenIn(events)

describe(`the app backend on its embedded swarm`, () => {
  beforeAll(async () => {
    ;({ dir, cleanup } = await scratchDir('neuron-app-'))
    backend = await startEmbeddedBackend(join(dir, 'app'), events)
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
      // Local use: the steps this computer's own host served cost its chat nothing; only another host's are charged.
      const paidHops = done?.route.filter((h) => h.hostId !== backend.hostId) ?? []
      expect((done?.chargedMicro ?? 0) > 0).toBe(paidHops.length > 0)
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
    // The reference client's steps are what this host earned (the app's own chat is free): its receipts come in the
    // host's next batch (a second).
    await until(
      'the reference client’s steps paid',
      async () => (await call('earnings.get', {})).pendingMicro > 0,
      10_000,
    )
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
})
