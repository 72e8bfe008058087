import type { ChatRunner } from '../chat'
import type { GroupHandlers } from './registry'

/** Answers from the swarm's models, streamed as chat.* events (ChatRunner). */
export class ChatController {
  readonly handlers: GroupHandlers<'chat'> = {
    'chat.send': (request) => this.chats.send(request),
    'chat.stop': ({ chatId }) => this.chats.stop(chatId),
  }

  constructor(private readonly chats: ChatRunner) {}
}
