import type { Settings } from '../../protocol/app'

export const someSettings: Settings = {
  trackerUrl: null,
  connectedTrackerUrl: 'http://127.0.0.1:43111',
  dataDir: '/home/ada/.neuron',
  publicKey: 'A'.repeat(43),
  hostId: '0123456789abcdef0123',
  limits: { diskBytes: 20e9, memoryBytes: null, threads: 8, useGpu: true },
  canPickFiles: false,
  notice: null,
  privacy: { level: 'private', consented: true },
  allowedKeys: null,
  lanOpen: false,
}
