// GBNF (llama.cpp's grammar format) parsed to plain rules: literals, character classes, rule references,
// groups, alternatives and the repetitions * + ? {m} {m,} {m,n}, each repetition rewritten into rules of its own.

/** A character class: code-point ranges, inclusive; `negated` matches every code point outside them. */
export interface CharClass {
  readonly kind: 'chars'
  readonly ranges: readonly (readonly [number, number])[]
  readonly negated: boolean
}
export interface RuleRef {
  readonly kind: 'ref'
  readonly rule: number
}
export type Element = CharClass | RuleRef
/** A sequence of elements; a rule is a list of alternatives. */
export type Alternative = readonly Element[]

export interface Grammar {
  /** Rules by index; `root` is the start. */
  readonly rules: readonly (readonly Alternative[])[]
  readonly names: readonly string[]
  readonly root: number
}

export class GrammarError extends Error {}

/** The largest bounded repetition ({m,n}) a grammar may write: each count is a copy of the repeated item. */
const MAX_REPEAT = 1000
/** Rules a grammar may have once its repetitions are rewritten: bounds the matcher's tables. */
const MAX_RULES = 20_000

export function parseGbnf(source: string): Grammar {
  return new Parser(source).parse()
}

class Parser {
  private pos = 0
  private readonly rules: Alternative[][] = []
  private readonly names: string[] = []
  private readonly byName = new Map<string, number>()
  private readonly defined = new Set<number>()

  constructor(private readonly src: string) {}

  parse(): Grammar {
    this.space(true)
    while (this.pos < this.src.length) {
      const name = this.name()
      this.space(false)
      if (!this.src.startsWith('::=', this.pos)) this.fail(`expected ::= after rule name ${name}`)
      this.pos += 3
      const id = this.ruleId(name)
      if (this.defined.has(id)) this.fail(`rule ${name} is defined twice`)
      this.defined.add(id)
      this.rules[id] = this.alternatives(false)
      this.space(true)
    }
    const root = this.byName.get('root')
    if (root === undefined || !this.defined.has(root))
      throw new GrammarError('the grammar has no root rule (root ::= ...)')
    for (const [name, id] of this.byName)
      if (!this.defined.has(id)) throw new GrammarError(`rule ${name} is used but never defined`)
    return { rules: this.rules, names: this.names, root }
  }

  private ruleId(name: string): number {
    let id = this.byName.get(name)
    if (id === undefined) {
      id = this.newRule(name)
      this.byName.set(name, id)
    }
    return id
  }

  private newRule(name: string, alts: Alternative[] = []): number {
    if (this.rules.length >= MAX_RULES)
      throw new GrammarError(`the grammar needs more than ${MAX_RULES} rules; simplify it`)
    this.rules.push(alts)
    this.names.push(name)
    return this.rules.length - 1
  }

  private alternatives(nested: boolean): Alternative[] {
    const alts: Alternative[] = [this.sequence(nested)]
    while (this.src[this.pos] === '|') {
      this.pos++
      this.space(true)
      alts.push(this.sequence(nested))
    }
    return alts
  }

  private sequence(nested: boolean): Element[] {
    const seq: Element[] = []
    let last: Element[] = [] // the item a repetition applies to
    for (;;) {
      this.space(nested)
      const c = this.src[this.pos]
      if (c === undefined || c === '|' || c === ')' || c === '\n' || c === '\r') return seq
      let item: Element[]
      if (c === '"') item = this.literal()
      else if (c === '[') item = [this.charClass()]
      else if (c === '.') {
        this.pos++
        item = [{ kind: 'chars', ranges: [], negated: true }]
      } else if (c === '(') {
        this.pos++
        this.space(true)
        const alts = this.alternatives(true)
        if (this.src[this.pos] !== ')') this.fail('expected )')
        this.pos++
        item = [{ kind: 'ref', rule: this.newRule(`group-${this.rules.length}`, alts) }]
      } else if (c === '*' || c === '+' || c === '?' || c === '{') {
        if (last.length === 0) this.fail(`${c} follows nothing`)
        seq.splice(seq.length - last.length, last.length)
        const [min, max] = this.repetition()
        item = this.repeat(last, min, max)
        seq.push(...item)
        last = []
        continue
      } else if (/[a-zA-Z0-9_-]/.test(c)) {
        const save = this.pos
        const name = this.name()
        this.space(false)
        if (this.src.startsWith('::=', this.pos)) {
          this.pos = save // the next rule starts here
          return seq
        }
        item = [{ kind: 'ref', rule: this.ruleId(name) }]
      } else this.fail(`unexpected ${JSON.stringify(c)}`)
      seq.push(...item)
      last = item
    }
  }

  private repetition(): [number, number] {
    const c = this.src[this.pos++]
    if (c === '*') return [0, Number.POSITIVE_INFINITY]
    if (c === '+') return [1, Number.POSITIVE_INFINITY]
    if (c === '?') return [0, 1]
    const m = /^\s*(\d+)\s*(,\s*(\d*)\s*)?\}/.exec(this.src.slice(this.pos, this.pos + 32))
    if (m === null) this.fail('expected {m}, {m,} or {m,n}')
    this.pos += m[0].length
    const min = Number(m[1])
    const max = m[2] === undefined ? min : m[3] === '' ? Number.POSITIVE_INFINITY : Number(m[3])
    if (max < min || min > MAX_REPEAT || (max !== Number.POSITIVE_INFINITY && max > MAX_REPEAT))
      this.fail(`a repetition {${min},${max}} must have min <= max <= ${MAX_REPEAT}`)
    return [min, max]
  }

  /** `item` min times, then up to max - min optional times (or any more when unbounded), as llama.cpp rewrites it. */
  private repeat(item: Element[], min: number, max: number): Element[] {
    const out: Element[] = []
    for (let i = 0; i < min; i++) out.push(...item)
    if (max === Number.POSITIVE_INFINITY) {
      const id = this.newRule(`star-${this.rules.length}`)
      this.rules[id] = [[...item, { kind: 'ref', rule: id }], []]
      out.push({ kind: 'ref', rule: id })
      return out
    }
    // x{0,k} nests: opt_k ::= x opt_{k-1} | ε
    let tail: number | undefined
    for (let i = 0; i < max - min; i++) {
      const alts: Alternative[] = [[...item, ...(tail === undefined ? [] : [{ kind: 'ref' as const, rule: tail }])], []]
      tail = this.newRule(`opt-${this.rules.length}`, alts)
    }
    if (tail !== undefined) out.push({ kind: 'ref', rule: tail })
    return out
  }

  private literal(): Element[] {
    this.pos++ // "
    const out: Element[] = []
    while (this.src[this.pos] !== '"') {
      if (this.pos >= this.src.length) this.fail('unterminated string')
      const cp = this.char()
      out.push({ kind: 'chars', ranges: [[cp, cp]], negated: false })
    }
    this.pos++
    return out
  }

  private charClass(): CharClass {
    this.pos++ // [
    const negated = this.src[this.pos] === '^'
    if (negated) this.pos++
    const ranges: [number, number][] = []
    while (this.src[this.pos] !== ']') {
      if (this.pos >= this.src.length) this.fail('unterminated character class')
      const lo = this.char()
      let hi = lo
      if (this.src[this.pos] === '-' && this.src[this.pos + 1] !== ']') {
        this.pos++
        hi = this.char()
      }
      if (hi < lo) this.fail(`range ${lo}-${hi} is reversed`)
      ranges.push([lo, hi])
    }
    this.pos++
    return { kind: 'chars', ranges, negated }
  }

  /** One code point of a literal or class, escapes decoded. */
  private char(): number {
    const c = this.src.codePointAt(this.pos) as number
    if (c !== 0x5c) {
      this.pos += c > 0xffff ? 2 : 1
      return c
    }
    const e = this.src[this.pos + 1]
    this.pos += 2
    const simple: Record<string, number> = {
      n: 10,
      r: 13,
      t: 9,
      b: 8,
      f: 12,
      '/': 47,
      '\\': 92,
      '"': 34,
      '[': 91,
      ']': 93,
      '-': 45,
      '^': 94,
    }
    if (e !== undefined && simple[e] !== undefined) return simple[e]
    const digits = e === 'x' ? 2 : e === 'u' ? 4 : e === 'U' ? 8 : 0
    const hex = this.src.slice(this.pos, this.pos + digits)
    if (digits === 0 || !/^[0-9a-fA-F]+$/.test(hex) || hex.length !== digits) this.fail(`bad escape \\${e ?? ''}`)
    this.pos += digits
    return Number.parseInt(hex, 16)
  }

  private name(): string {
    const m = /^[a-zA-Z0-9_-]+/.exec(this.src.slice(this.pos, this.pos + 256))
    if (m === null) this.fail('expected a rule name')
    this.pos += m[0].length
    return m[0]
  }

  /** Skips spaces and # comments; newlines only where `newlines` (between rules, inside groups). */
  private space(newlines: boolean): void {
    for (;;) {
      const c = this.src[this.pos]
      if (c === ' ' || c === '\t' || (newlines && (c === '\n' || c === '\r'))) this.pos++
      else if (c === '#') while (this.pos < this.src.length && this.src[this.pos] !== '\n') this.pos++
      else return
    }
  }

  private fail(what: string): never {
    const line = this.src.slice(0, this.pos).split('\n').length
    throw new GrammarError(`grammar line ${line}: ${what}`)
  }
}
