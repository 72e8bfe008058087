import { existsSync } from 'node:fs'
import { resolve } from 'node:path'
import { describe, expect, it } from 'vitest'
import { appPaths, dataDirOverride } from './paths'

describe('app paths', () => {
  it('takes the data dir from --data-dir, then NEURON_DATA_DIR, else none', () => {
    expect(dataDirOverride(['electron', '.', '--data-dir', '/tmp/a'], { NEURON_DATA_DIR: '/tmp/b' })).toBe('/tmp/a')
    expect(dataDirOverride(['electron', '.', '--data-dir=/tmp/c'], {})).toBe('/tmp/c')
    expect(dataDirOverride(['electron', '.'], { NEURON_DATA_DIR: '/tmp/b' })).toBe('/tmp/b')
    expect(dataDirOverride(['electron', '.'], { NEURON_DATA_DIR: '' })).toBeNull()
    expect(dataDirOverride(['electron', '.', '--data-dir=profile'], {})).toBe(resolve('profile'))
  })

  it('points at the icons this repository ships', () => {
    expect(existsSync(appPaths.trayIcon)).toBe(true)
    expect(existsSync(appPaths.windowIcon)).toBe(true)
  })
})
