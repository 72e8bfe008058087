import { describe, expect, it } from 'vitest'
import { desktopView } from '../../../test/renderer/computer-fixtures'
import { cpuLine, gpuLines, memoryLine, servableLine } from './selectors'

describe('computer selectors', () => {
  it('describes the CPU, memory and what can be served', () => {
    expect(cpuLine(desktopView)).toBe('AMD Ryzen 7 5800X · 8 cores / 16 threads')
    expect(memoryLine(desktopView)).toBe('32.0 GB total · 20.0 GB available')
    expect(servableLine(desktopView)).toBe('Can serve about 14.5 GB of layers')
  })

  it('says so when there is no GPU, and lists VRAM when there is', () => {
    expect(gpuLines(desktopView)).toEqual(['No GPU detected'])
    const withGpu = {
      ...desktopView,
      profile: { ...desktopView.profile, gpus: [{ vendor: 'NVIDIA', model: 'RTX 3060', vramBytes: 12e9 }] },
    }
    expect(gpuLines(withGpu)).toEqual(['NVIDIA RTX 3060 · 12.0 GB VRAM'])
  })
})
