import { describe, expect, it } from 'vitest'
import { downloading, tinyPreview } from '../../../test/renderer/hosting-fixtures'
import { formatBytes } from '../../format'
import {
  artifactRow,
  cacheFigures,
  canPause,
  canResume,
  canStop,
  chosenOption,
  creditsPerHour,
  downloadFigure,
  hostingBadge,
  hostingReach,
  phaseText,
  placementCells,
  routeFigures,
  showsPicker,
  uptimeText,
} from './selectors'

describe('hosting selectors', () => {
  it('draws one cell per block with the hosts before and the proposed range highlighted', () => {
    const cells = placementCells(tinyPreview, [3, 6])
    expect(cells.map((c) => c.before)).toEqual([2, 2, 1, 0, 0, 0])
    expect(cells.map((c) => c.proposed)).toEqual([false, false, false, true, true, true])
  })

  it(
    'shows the figures of the alternative the user picked; without the tracker’s price, credits are scaled by its ' +
      'block-tokens',
    () => {
      const option = chosenOption(tinyPreview, [2, 4])
      expect(option?.blocks).toEqual([2, 4])
      expect(creditsPerHour(tinyPreview, option)?.credits).toBeCloseTo(2)
      expect(creditsPerHour(tinyPreview, option)?.estimated).toBe(true)
      expect(creditsPerHour(tinyPreview, chosenOption(tinyPreview, [3, 6]))).toEqual({ credits: 3, estimated: false })
    },
  )

  it('says what of the chosen range is already on disk instead of counting it to download', () => {
    const option = chosenOption(tinyPreview, [3, 6])
    if (option === null) throw new Error('expected the proposal')
    const total = option.bytesToDownload
    expect(downloadFigure(tinyPreview, option)).toEqual({
      label: 'To download',
      value: formatBytes(total),
      hint: undefined,
    })
    const all = { ...tinyPreview, bytesOnDisk: [{ blocks: [3, 6] as [number, number], bytes: total }] }
    expect(downloadFigure(all, option)).toEqual({
      label: 'On disk',
      value: formatBytes(total),
      hint: 'every file is already here: nothing to download',
    })
    const part = { ...tinyPreview, bytesOnDisk: [{ blocks: [3, 6] as [number, number], bytes: 1000 }] }
    expect(downloadFigure(part, option)).toEqual({
      label: 'To download',
      value: formatBytes(total - 1000),
      hint: '1 kB already on disk',
    })
  })

  it('takes each option’s credits per hour from the tracker’s price when it gives one', () => {
    const { placement } = tinyPreview
    const priced = {
      ...tinyPreview,
      placement: {
        ...placement,
        alternatives: placement.alternatives.map((a) => ({ ...a, hostMicroPerHour: 1_250_000 })),
      },
    }
    expect(creditsPerHour(priced, chosenOption(priced, [2, 4]))).toEqual({ credits: 1.25, estimated: false })
  })

  it('shows the cache one token costs each block of the chosen range, from the tracker’s per-block figures', () => {
    const option = chosenOption(tinyPreview, [3, 6])
    if (option === null) throw new Error('fixture has a proposal')
    expect(cacheFigures(option)).toEqual({
      perTokenPerBlock: '1 kB per token',
      reserved: '300 kB reserved for 3 layers',
    })
    expect(cacheFigures({ ...option, blocks: [0, 7] })?.perTokenPerBlock).toBe('≈ 429 B per token')
    expect(cacheFigures({ ...option, cacheBytes: undefined })).toBeNull()
  })

  it(
    'shows hosts per route, the bytes crossing the range’s seams and its cache per token over a 128K session, ' +
      'when the tracker gives them',
    () => {
      const option = chosenOption(tinyPreview, [3, 6])
      if (option === null) throw new Error('fixture has a proposal')
      expect(routeFigures(tinyPreview, option)).toEqual({ hostsPerRoute: null, seam: null, longContext: null })
      const withRoute = { ...tinyPreview, placement: { ...tinyPreview.placement, hostsPerRoute: 16 } }
      // 32 KiB in and out of the range per token; 131 072 tokens × 100 B of cache each
      const figures = routeFigures(withRoute, {
        ...option,
        seamBytesPerToken: 32_768,
        longContextCacheBytes: 13_107_200,
      })
      expect(figures).toEqual({
        hostsPerRoute: '16',
        seam: '33 kB per token',
        longContext: {
          label: 'Cache at 128K',
          perToken: '100 B per token',
          session: '13.1 MB for one 128K-token session',
        },
      })
      // a 2 048-token model: the figure at its own context, not at a 128K it cannot reach
      const short = routeFigures(withRoute, { ...option, longContextCacheBytes: 204_800, longContextTokens: 2048 })
      expect(short.longContext).toEqual({
        label: 'Cache at 2K',
        perToken: '100 B per token',
        session: '205 kB for one 2K-token session',
      })
      expect(
        routeFigures({ ...tinyPreview, placement: { ...tinyPreview.placement, hostsPerRoute: null } }, option)
          .hostsPerRoute,
      ).toBe('none: no block fits')
    },
  )

  it('describes a download row with its progress, speed and time left', () => {
    const artifact = downloading.artifacts[0]
    if (artifact === undefined) throw new Error('fixture has an artifact')
    expect(artifactRow(artifact)).toEqual({
      file: 'blk-03-06.gguf',
      fraction: 0.5,
      bytes: '300 kB / 600 kB',
      speed: '100 kB/s',
      peers: 2,
      eta: '3s',
    })
    expect(artifactRow({ ...artifact, etaSeconds: null }).eta).toBe('estimating…')
  })

  it('names each phase for people and shows the picker again after a failure', () => {
    expect(phaseText('loading')).toBe('Loading layers into memory')
    expect(showsPicker({ ...downloading, phase: 'failed' })).toBe(true)
    expect(showsPicker(downloading)).toBe(false)
    expect(canResume({ ...downloading, phase: 'paused' }, 'ok')).toBe(true)
    expect(uptimeText(0, 65_000)).toBe('1m 05s')
  })

  it('shows no green "Serving" and no working buttons while the app or its tracker does not answer', () => {
    const tracker = { trackerUrl: 'http://127.0.0.1:7070', state: 'unreachable' as const, problem: 'x', since: 0 }
    expect(hostingReach('open', null)).toBe('ok')
    expect(hostingReach('reconnecting', null)).toBe('app')
    expect(hostingReach('open', tracker)).toBe('tracker')
    expect(hostingBadge('serving', 'ok')).toEqual({ text: 'Serving', tone: 'serving' })
    expect(hostingBadge('serving', 'app')).toEqual({
      text: 'Unreachable — the app is not answering',
      tone: 'unreachable',
    })
    expect(hostingBadge('serving', 'tracker').text).toMatch(/^Tracker unreachable/)
    expect(hostingBadge('paused', 'tracker').text).toBe('Paused')
    const serving = { ...downloading, phase: 'serving' as const }
    expect([canPause(serving, 'app'), canStop(serving, 'app')]).toEqual([false, false])
    // Pausing and stopping drain the host here; resuming asks the tracker for the model first.
    expect([canPause(serving, 'tracker'), canStop(serving, 'tracker')]).toEqual([true, true])
    expect(canResume({ ...downloading, phase: 'paused' }, 'tracker')).toBe(false)
  })
})
