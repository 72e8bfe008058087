import { describe, expect, it } from 'vitest'
import { NeuronError } from '../../protocol'
import { routingRefusal } from './chat-refusals'

const noRoute = (unavailable: Record<string, number>) =>
  new NeuronError(
    'no_route',
    'no route for blocks [2, 5) of 5: no ready host with a free session and 191 free KV tokens serves them',
    { uncovered: [[2, 5]], span: [0, 5], tokens: 191, unavailable },
  )

describe('a routing refusal as a chat shows it', () => {
  it('says every computer serving the model is busy, in plain words, when the hosts are only full', () => {
    for (const error of [noRoute({ 'no free session': 2, 'too little free KV': 1 }), new NeuronError('busy', 'x')]) {
      const shown = routingRefusal(error, 'stories260k')
      expect(shown?.code).toBe('swarm_busy')
      expect(shown?.message).toBe(
        'No computer in the swarm can take this chat right now: every one serving stories260k is busy or its ' +
          'memory is full. Try again in a minute, or host part of the model yourself.',
      )
    }
  })

  it('says part of the model is served by no computer, without block ranges, KV or sessions', () => {
    const none = routingRefusal(noRoute({}), 'stories260k')
    expect(none).toMatchObject({ code: 'model_not_served', details: { uncovered: [[2, 5]] } })
    expect(none?.message).toMatch(/^No computer in the swarm serves part of stories260k right now/)
    const starting = routingRefusal(noRoute({ starting: 1, 'no free session': 1 }), 'stories260k')
    expect(starting?.message).toMatch(/those serving part of it are starting, busy or unreachable/)
    for (const shown of [none, starting]) expect(shown?.message).not.toMatch(/KV|session|route|\[2, 5\)/)
  })

  it('leaves other errors as they are', () => {
    expect(routingRefusal(new NeuronError('insufficient_credits', 'out'), 'm')).toBeNull()
    expect(routingRefusal(new Error('boom'), 'm')).toBeNull()
    expect(routingRefusal(new NeuronError('no_route', 'cuts', { uncovered: [], forbiddenCuts: [3] }), 'm')).toBeNull()
  })
})
