// Neuron's programs in a namespace of the test network, as the network tests and benches start them.
import { join } from 'node:path'
import { REPO_ROOT } from '../models'
import { type NeuronProcess, watchProcess } from '../processes'
import type { HomeNetwork, Place } from '.'

function nodeIn(net: HomeNetwork, place: Place, args: string[], what: string): NeuronProcess {
  return watchProcess(net.spawnIn(place, process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] }), what)
}

/** `neuron …` in `place`, as a person there would run it. */
export function neuronIn(net: HomeNetwork, place: Place, args: string[]): NeuronProcess {
  return nodeIn(net, place, [join(REPO_ROOT, 'bin/neuron.js'), ...args], `neuron ${args[0]} in ${place}`)
}

/** A swarm client in `place` (swarm-child.ts: `hosts` or `chat`), printing a JSON line per event. */
export function swarmChildIn(net: HomeNetwork, place: Place, args: string[]): NeuronProcess {
  return nodeIn(
    net,
    place,
    ['--import', 'tsx', join(REPO_ROOT, 'test/network/swarm-child.ts'), ...args],
    `swarm client in ${place}`,
  )
}
