import { NeuronError, type SwarmPrivacy } from '../../../protocol'
import type { ChatRunner } from '../chat'
import type { GroupHandlers } from './registry'

/**
 * Answers from the swarm's models, streamed as chat.* events (ChatRunner); on a public swarm only once the user agreed.
 */
export class ChatController {
  readonly handlers: GroupHandlers<'chat'> = {
    'chat.send': (request) => {
      if (!this.privacy().consented) {
        throw new NeuronError(
          'consent_needed',
          'this tracker is public: the hosts on a route see your prompt, the answer and the hidden states between ' +
            'them; agree to that first (settings.consent), then send again',
        )
      }
      // A chat on a tracker that is gone fails now, saying so, rather than waiting out its calls' timeouts.
      this.checkReachable()
      return this.chats.send(request)
    },
    'chat.stop': ({ chatId }) => this.chats.stop(chatId),
    'chat.count': ({ modelId, messages }) => this.chats.count(modelId, messages),
    'chat.context': ({ modelId }) => this.chats.context(modelId),
  }

  constructor(
    private readonly chats: ChatRunner,
    /** The swarm in force's privacy level and the user's consent to it. */
    private readonly privacy: () => SwarmPrivacy,
    /** Throws tracker_unreachable while the tracker does not answer (CurrentSwarm.checkReachable). */
    private readonly checkReachable: () => void,
  ) {}
}
