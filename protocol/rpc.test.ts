import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { BlockRange } from './blocks'
import { NeuronError } from './errors'
import { HardwareProfile, IDLE_STATE, MIN_MS_PER_BLOCK, ServingState } from './host-state'
import { MAX_CPU_FLAGS, MAX_LABEL_CHARS, MAX_MESSAGE_CHARS } from './limits'
import { describeIssues, toWireError, WireError } from './rpc'
import { ClientToTracker } from './swarm'

describe('parsing what a peer sends', () => {
  it('refuses binary data where a block range is expected, as a parse failure rather than an exception', () => {
    // zod 4's .readonly() froze the input even when the parse failed, and threw on a Buffer.
    expect(BlockRange.safeParse(Buffer.from('xx')).success).toBe(false)
    expect(BlockRange.safeParse(new Uint8Array([1, 2])).success).toBe(false)
    const plan = ClientToTracker['route.plan'].request
    const parsed = plan.safeParse({
      modelId: 'stories260k',
      maxTokens: 8,
      session: 'ab'.repeat(16),
      span: Buffer.from('xx'),
    })
    expect(parsed.success).toBe(false)
    expect(BlockRange.parse([1, 3])).toEqual([1, 3])
  })

  it('refuses a hardware profile with strings or arrays past their bounds', () => {
    const profile = {
      cpu: { model: 'cpu', cores: 2, physicalCores: 2, flags: [] as string[] },
      memory: { totalBytes: 1, availableBytes: 1 },
      gpus: [],
      disk: { path: '/tmp', freeBytes: 1, readBytesPerSecond: 1 },
      memoryBytesPerSecond: 1,
      threads: 1,
    }
    expect(HardwareProfile.safeParse(profile).success).toBe(true)
    expect(
      HardwareProfile.safeParse({ ...profile, cpu: { ...profile.cpu, model: 'x'.repeat(MAX_LABEL_CHARS + 1) } })
        .success,
    ).toBe(false)
    expect(
      HardwareProfile.safeParse({ ...profile, cpu: { ...profile.cpu, flags: Array(MAX_CPU_FLAGS + 1).fill('sse') } })
        .success,
    ).toBe(false)
  })

  it(
    'refuses a speed claim so small that the throughput placement computes from it is infinite (the fuzz test ' +
      'found one)',
    () => {
      expect(ServingState.safeParse({ ...IDLE_STATE, msPerBlock: 5e-324 }).success).toBe(false)
      expect(ServingState.safeParse({ ...IDLE_STATE, msPerBlock: Number.POSITIVE_INFINITY }).success).toBe(false)
      expect(ServingState.safeParse({ ...IDLE_STATE, msPerBlock: MIN_MS_PER_BLOCK }).success).toBe(true)
      expect(Number.isFinite(1000 / MIN_MS_PER_BLOCK)).toBe(true)
    },
  )

  it('keeps an error on the wire within the bounds its schema parses with, however long the cause', () => {
    const wire = toWireError(new NeuronError('bad_request', `bad: ${'x'.repeat(10 * MAX_MESSAGE_CHARS)}`))
    expect(WireError.safeParse(wire).success).toBe(true)
    expect(WireError.safeParse(toWireError(new Error('y'.repeat(10 * MAX_MESSAGE_CHARS)))).success).toBe(true)
    // A payload with thousands of bad fields is described by its first few.
    const many = z.array(z.number()).safeParse(Array(5000).fill('not a number'))
    if (many.success) throw new Error('expected a failure')
    const line = describeIssues('route.plan', many.error)
    expect(line.length).toBeLessThanOrEqual(MAX_MESSAGE_CHARS)
    expect(line).toMatch(/^route\.plan: 0: .*; and 4992 more$/)
  })
})
