import { NeuronError } from './errors'
import { PublicKey } from './identity'

/** Keys one private swarm may list: far past any group of people, short of a file built to exhaust memory. */
export const MAX_ALLOWED_KEYS = 100_000

/**
 * A private swarm's allow-list as a person writes it (`neuron tracker --allow-keys FILE`, the app's
 * Settings): one base64url public key a line; `#` starts a comment; blank lines are skipped. A bad
 * line is refused with its number, never skipped: a key mistyped would lock its owner out unseen.
 */
export function parseAllowedKeys(text: string, source: string): string[] {
  const keys = new Set<string>()
  for (const [i, raw] of text.split(/\r?\n/).entries()) {
    const line = (raw.split('#')[0] ?? '').trim()
    if (line === '') continue
    if (!PublicKey.safeParse(line).success) {
      const shown = line.length > 60 ? `${line.slice(0, 60)}…` : line
      throw new NeuronError(
        'bad_allowed_keys',
        `${source} line ${i + 1}: "${shown}" is not a public key (43 characters of base64url, as the app's ` +
          `Settings or a host's log show it); fix the line or comment it out with #.`,
        { source, line: i + 1 },
      )
    }
    keys.add(line)
    if (keys.size > MAX_ALLOWED_KEYS)
      throw new NeuronError('bad_allowed_keys', `${source} lists more than ${MAX_ALLOWED_KEYS} keys; split the swarm.`)
  }
  return [...keys]
}
