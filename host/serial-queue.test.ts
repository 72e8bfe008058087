import { describe, expect, it } from 'vitest'
import { SerialQueue } from './serial-queue'

const tick = (ms: number) => new Promise((r) => setTimeout(r, ms))

describe('SerialQueue', () => {
  it('runs tasks one at a time, in the order given, even when an earlier one takes longer', async () => {
    const queue = new SerialQueue()
    const log: string[] = []
    let running = 0
    const task = (name: string, ms: number) => async () => {
      running++
      expect(running).toBe(1)
      log.push(`${name} start`)
      await tick(ms)
      log.push(`${name} end`)
      running--
      return name
    }
    const results = await Promise.all([queue.run(task('a', 30)), queue.run(task('b', 0)), queue.run(task('c', 10))])
    expect(results).toEqual(['a', 'b', 'c'])
    expect(log).toEqual(['a start', 'a end', 'b start', 'b end', 'c start', 'c end'])
  })

  it('gives a failing task’s error to its caller only, and runs the tasks after it', async () => {
    const queue = new SerialQueue()
    const failing = queue.run(async () => {
      await tick(5)
      throw new Error('disk full')
    })
    const throwing = queue.run(() => {
      throw new Error('bad input')
    })
    const after = queue.run(() => 'still runs')
    await expect(failing).rejects.toThrow('disk full')
    await expect(throwing).rejects.toThrow('bad input')
    expect(await after).toBe('still runs')
  })

  it('never starts a task within the call that queues it', async () => {
    const queue = new SerialQueue()
    let started = false
    const run = queue.run(() => {
      started = true
    })
    expect(started).toBe(false)
    await run
    expect(started).toBe(true)
  })

  it('is busy while a task is queued or running, failed ones too, and idle once all have settled', async () => {
    const queue = new SerialQueue()
    expect(queue.busy).toBe(false)
    const slow = queue.run(() => tick(20))
    const failing = queue.run(async () => {
      throw new Error('no')
    })
    expect(queue.busy).toBe(true)
    await slow
    await failing.catch(() => {})
    await tick(0)
    expect(queue.busy).toBe(false)
  })
})
