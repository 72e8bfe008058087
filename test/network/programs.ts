// Neuron's programs in a namespace of the test network, as the network tests and benches start them.
import type { SpawnOptions } from 'node:child_process'
import { join } from 'node:path'
import { REPO_ROOT } from '../models'
import { type NeuronProcess, watchProcess } from '../processes'
import type { HomeNetwork, Place } from '.'

function nodeIn(net: HomeNetwork, place: Place, args: string[], what: string, env?: NodeJS.ProcessEnv): NeuronProcess {
  const options: SpawnOptions = { stdio: ['ignore', 'pipe', 'pipe'], ...(env === undefined ? {} : { env }) }
  return watchProcess(net.spawnIn(place, process.execPath, args, options), what)
}

/** `neuron …` in `place`, as a person there would run it. */
export function neuronIn(net: HomeNetwork, place: Place, args: string[]): NeuronProcess {
  return nodeIn(net, place, [join(REPO_ROOT, 'bin/neuron.js'), ...args], `neuron ${args[0]} in ${place}`)
}

/**
 * A swarm client in `place` (swarm-child.ts: `hosts` or `chat`), printing a JSON line per event. `punch: false`: no
 * channel punched to a host that accepts no connections (NEURON_PUNCH=0), for tests of the relays themselves.
 */
export function swarmChildIn(net: HomeNetwork, place: Place, args: string[], punch = true): NeuronProcess {
  return nodeIn(
    net,
    place,
    ['--import', 'tsx', join(REPO_ROOT, 'test/network/swarm-child.ts'), ...args],
    `swarm client in ${place}`,
    punch ? undefined : { ...process.env, NEURON_PUNCH: '0' },
  )
}
