/**
 * Runs tasks one at a time, in the order they were given. Each caller gets its own task's result or
 * error; a task that fails (or throws before its first await) does not stop the ones after it.
 */
export class SerialQueue {
  /** The last task queued, settled either way: the next one starts after it. */
  private last: Promise<unknown> = Promise.resolve()
  private pending = 0

  /** Whether a task is queued or running (a session with a step in flight is not idle, however long it runs). */
  get busy(): boolean {
    return this.pending > 0
  }

  /** Queues `task`; it starts once every task queued before it has settled, never within this call. */
  run<T>(task: () => T | Promise<T>): Promise<T> {
    this.pending++
    const run = this.last.then(task, task)
    this.last = run.catch(() => {}).finally(() => this.pending--)
    return run
  }
}
