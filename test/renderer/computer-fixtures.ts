import type { ComputerView } from '../../protocol/app'

/** A mid-range desktop, as computer.get answers it. */
export const desktopView: ComputerView = {
  profile: {
    cpu: { model: 'AMD Ryzen 7 5800X', cores: 16, physicalCores: 8, flags: ['avx2'] },
    memory: { totalBytes: 32e9, availableBytes: 20e9 },
    gpus: [],
    disk: { path: '/home/ada/.neuron', freeBytes: 412e9, readBytesPerSecond: 2.1e9 },
    memoryBytesPerSecond: 18e9,
    threads: 8,
  },
  servableBytes: 14.5e9,
  summary: 'This computer can hold about a third of a 40 GB model.',
  limits: { diskBytes: null, memoryBytes: null, threads: 8, useGpu: true },
}
