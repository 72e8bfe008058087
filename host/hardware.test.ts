import { describe, expect, it } from 'vitest'
import { defaultThreads } from './hardware'

describe('the runtime thread count a volunteer gets without setting one', () => {
  it('leaves a core to the app and the swarm connection on computers of up to 4 cores', () => {
    expect([1, 2, 3, 4].map((cores) => defaultThreads(cores, cores))).toEqual([1, 1, 2, 3])
    // Hyper-threads are not cores: a 2-core, 4-thread laptop still runs one.
    expect(defaultThreads(2, 4)).toBe(1)
  })

  it('uses every physical core on larger computers, and never more than the OS lets this process use', () => {
    expect(defaultThreads(8, 16)).toBe(8)
    expect(defaultThreads(16, 6)).toBe(6)
    expect(defaultThreads(0, 1)).toBe(1)
  })
})
