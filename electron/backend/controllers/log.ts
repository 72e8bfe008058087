import type { AppLog } from '../app-log'
import type { GroupHandlers } from './registry'

/** The app's own log, for the Log screen. */
export class LogController {
  readonly handlers: GroupHandlers<'log'> = {
    'log.get': async ({ after }) => this.appLog.since(after),
  }

  constructor(private readonly appLog: AppLog) {}
}
