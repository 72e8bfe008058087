import { describe, expect, it } from 'vitest'
import type { HubDownloadView } from '../../../protocol/app'
import { downloadText, hubFit } from './selectors'

const download: HubDownloadView = {
  repo: 'a/b',
  name: 'm-Q4_K_M',
  quant: 'Q4_K_M',
  phase: 'downloading',
  downloadedBytes: 250e6,
  totalBytes: 1e9,
  bytesPerSecond: 5e6,
  secondsLeft: 150,
  modelId: null,
  error: null,
}

describe('the Hub panel’s words', () => {
  it('says whether a model fits this computer whole, in part (with the share), or hardly at all', () => {
    expect(hubFit(1e9, 4e9)).toEqual({ level: 'all', text: 'Fits on this computer whole.' })
    expect(hubFit(10e9, 4e9).text).toBe('This computer can hold about 40% of its blocks; other hosts serve the rest.')
    expect(hubFit(1000e9, 4e9).level).toBe('none')
    expect(hubFit(1e9, null).level).toBe('part')
  })

  it('shows a download’s percent, speed and time left, then what it does, then the model id or the error', () => {
    expect(downloadText(download)).toBe('25.0% of 1.0 GB at 5.0 MB/s, 2m 30s left')
    expect(downloadText({ ...download, phase: 'adding' })).toBe('Downloaded; packing and publishing…')
    expect(downloadText({ ...download, phase: 'ready', modelId: 'm-q4_k_m' })).toBe('Ready: published as m-q4_k_m')
    const error = { code: 'hub_gated', message: 'a/b is gated: set HF_TOKEN' }
    expect(downloadText({ ...download, phase: 'failed', error })).toBe('a/b is gated: set HF_TOKEN')
  })
})
