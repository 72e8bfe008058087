import { type AnswerVersion, MAX_ANSWER_VERSIONS } from '../../../protocol/app'
import type { ChatEntry } from './initialState'

// A turn's answers: regenerating keeps the answer it replaces, and the user pages through them ("‹ 2/3 ›"). The
// entry's own fields are the answer shown, the one the conversation goes on from and exports; the others wait in
// `alternatives`, with the shown one's place among them at `chosen`.

/** The answer an entry shows, without the turn's other fields. */
function shownVersion(entry: ChatEntry): AnswerVersion {
  const { role: _role, alternatives: _others, chosen: _chosen, ...shown } = entry
  return shown
}

/** Every answer of a turn, in the order they were made, the shown one at its place. */
export function answerVersions(entry: ChatEntry): AnswerVersion[] {
  const others = entry.alternatives ?? []
  const at = Math.min(entry.chosen ?? others.length, others.length)
  return [...others.slice(0, at), shownVersion(entry), ...others.slice(at)]
}

/** Which answer of how many an entry shows (1-based), as its pager says it. */
export function versionPosition(entry: ChatEntry): { shown: number; count: number } {
  const count = (entry.alternatives?.length ?? 0) + 1
  return { shown: Math.min(entry.chosen ?? count - 1, count - 1) + 1, count }
}

/** The turn showing its answer at `index` (0-based); the others kept beside it. Out of range: as it is. */
export function showVersion(entry: ChatEntry, index: number): ChatEntry {
  const all = answerVersions(entry)
  const picked = all[index]
  if (picked === undefined || index === versionPosition(entry).shown - 1) return entry
  return { ...picked, role: entry.role, alternatives: all.filter((_, i) => i !== index), chosen: index }
}

/**
 * What a new answer replacing `last` keeps of it: its answers so far (a failed or empty one is dropped: nothing to go
 * back to), the newest MAX_ANSWER_VERSIONS - 1, with the new one shown after them.
 */
export function keptBeside(last: ChatEntry): Pick<ChatEntry, 'alternatives' | 'chosen'> {
  const worth = answerVersions(last).filter((v) => v.status !== 'error' && v.status !== 'streaming' && v.content !== '')
  const alternatives = worth.slice(-(MAX_ANSWER_VERSIONS - 1))
  return alternatives.length === 0 ? {} : { alternatives, chosen: alternatives.length }
}
