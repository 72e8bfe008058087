// npm run bench:grammar-sampler — what a grammar costs the last hop's sampler per token. A JSON-schema grammar (the
// gateway's, for a person record) drives a greedy walk over random logits; baseline: the same sampler, same logits,
// no grammar, in the same run. Vocabularies: stories260K's own texts (512 tokens, from its GGUF) and a synthetic
// 150k-token vocabulary of 1–8 character pieces (a large model's size). Prints one JSON line per vocabulary with
// ms per token with and without the grammar, their ratio, and the candidates checked per token.
//
// Options: --tokens 200
import { compileGrammar, GrammarConstraint } from '../host/grammar/constraint'
import { loadTokenTexts } from '../host/grammar/token-texts'
import { SeededRandom, sampleToken } from '../native/sampler'
import { STORIES_260K } from '../test/models'
import { GrammarBuilder } from '../tracker/gateway/json-schema-grammar'

const i = process.argv.indexOf('--tokens')
const TOKENS = i >= 0 ? Number(process.argv[i + 1]) : 200
const SCHEMA = {
  type: 'object',
  properties: {
    name: { type: 'string', maxLength: 12 },
    age: { type: 'integer' },
    pets: { type: 'array', items: { enum: ['cat', 'dog'] }, maxItems: 3 },
  },
  required: ['name', 'age'],
}

function synthetic(n: number): string[] {
  const rng = new SeededRandom(1)
  const chars = 'abcdefghijklmnopqrstuvwxyz ABCDEFGHIJ0123456789{}[]",:.-'
  return Array.from({ length: n }, () =>
    Array.from({ length: 1 + Math.floor(rng.next() * 8) }, () => chars[Math.floor(rng.next() * chars.length)]).join(''),
  )
}

function run(
  texts: readonly string[],
  end: number,
  constrained: boolean,
): { msPerToken: number; checksPerToken: number; tokens: number } {
  const b = new GrammarBuilder('bench')
  const grammar = compileGrammar(b.rules(b.schema(SCHEMA)))
  const constraint = new GrammarConstraint(grammar, texts, [end])
  const rng = new SeededRandom(7)
  let checks = 0
  let made = 0
  let ms = 0
  for (; made < TOKENS; made++) {
    const logits = Float32Array.from({ length: texts.length }, () => rng.next() * 10)
    const started = performance.now()
    const allow = (t: number) => {
      checks++
      return constraint.allows(t)
    }
    const s = sampleToken(logits, { temperature: 0, ...(constrained ? { allow } : {}) }, [], () => rng.next())
    if (constrained) constraint.accept(s.token)
    ms += performance.now() - started
    if (constrained && s.token === end) break
  }
  return { msPerToken: ms / Math.max(1, made), checksPerToken: checks / Math.max(1, made), tokens: made }
}

for (const [name, texts, end] of [
  ['stories260K', await loadTokenTexts('stories260k', STORIES_260K), 2],
  ['synthetic-150k', synthetic(150_000), 0],
] as const) {
  const base = run(texts, end, false)
  const held = run(texts, end, true)
  console.log(
    JSON.stringify({
      vocabulary: name,
      nVocab: texts.length,
      tokens: held.tokens,
      baselineMsPerToken: +base.msPerToken.toFixed(3),
      grammarMsPerToken: +held.msPerToken.toFixed(3),
      ratio: +(held.msPerToken / base.msPerToken).toFixed(2),
      candidatesCheckedPerToken: +held.checksPerToken.toFixed(1),
    }),
  )
}
