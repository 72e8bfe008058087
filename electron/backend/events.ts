import { type AppEventData, type AppEventName, AppEvents, describeIssues } from '../../protocol'

export type AppEventListener = (event: AppEventName, data: unknown) => void

/** The backend's pushes to the renderer: each checked against AppEvents before any listener sees it. */
export class AppEventBus {
  private readonly listeners = new Set<AppEventListener>()

  constructor(private readonly log: (line: string) => void) {}

  on(listener: AppEventListener): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  emit<E extends AppEventName>(event: E, data: AppEventData<E>): void {
    const parsed = AppEvents[event].safeParse(data)
    if (!parsed.success) {
      const issues = describeIssues(event, parsed.error)
      this.log(`not sent: ${issues}`)
      // The renderer shows an answer as streaming until chat.done or chat.error: end it either way.
      if (event === 'chat.done') {
        const { chatId } = data as AppEventData<'chat.done'>
        this.emit('chat.error', {
          chatId,
          error: {
            code: 'internal',
            message: `the answer ended, but its summary was malformed (${issues}); send again`,
          },
        })
      }
      return
    }
    for (const l of this.listeners) {
      try {
        l(event, parsed.data)
      } catch (error) {
        this.log(`an event listener failed on ${event}: ${error instanceof Error ? error.message : error}`)
      }
    }
  }

  clear(): void {
    this.listeners.clear()
  }
}
