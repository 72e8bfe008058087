// GBNF parsed and matched as llama.cpp's grammar sampler does: prefixes of the language pass, everything else is
// refused, whole sentences accept the end; malformed grammars are refused with a typed error.
import { describe, expect, it } from 'vitest'
import { compileGrammar, GrammarConstraint } from './constraint'
import { parseGbnf } from './gbnf'
import { GrammarState } from './matcher'

const CALL = `root ::= "f(" arg ("," arg)* ")"
arg ::= [0-9]{1,3} | "\\"" [a-z]+ "\\""  # a number or a word`

describe('GBNF grammars', () => {
  it('takes the prefixes of its language and accepts only whole sentences', () => {
    const start = GrammarState.start(parseGbnf(CALL))
    expect(start.accepts).toBe(false)
    const partial = start.advance('f(12,"ab')
    expect(partial).toBeDefined()
    expect(partial?.accepts).toBe(false)
    expect(partial?.advance('")')?.accepts).toBe(true)
    expect(partial?.advance('")')?.finished).toBe(true)
    expect(start.advance('f(1234')).toBeUndefined()
    expect(start.advance('g(')).toBeUndefined()
    expect(start.advance('f()')).toBeUndefined()
  })

  it('refuses a malformed grammar with bad_grammar naming the line', () => {
    expect(() => compileGrammar('root ::= "a" missing')).toThrow(/bad_grammar|missing is used but never defined/)
    expect(() => compileGrammar('rot ::= "a"')).toThrow(/no root rule/)
    expect(() => compileGrammar('root ::= "a\nb ::= [z-a]')).toThrow(/line 2/)
    expect(() => compileGrammar('root ::= root "a"')).toThrow(/left recursion/)
  })

  it('allows a token whose text continues the grammar, and the end token only once the text is whole', () => {
    const texts = ['', 'f(', '1', '2', ')', 'x', '\uFFFD']
    const c = new GrammarConstraint(parseGbnf(CALL), texts, [0])
    expect([0, 1, 2, 3, 4, 5, 6].filter(c.allows)).toEqual([1])
    c.accept(1)
    c.accept(2)
    expect([0, 1, 2, 3, 4, 5, 6].filter(c.allows)).toEqual([2, 3, 4])
    c.accept(4)
    expect([0, 1, 2, 3, 4, 5, 6].filter(c.allows)).toEqual([0])
  })
})

describe('the work a grammar may take per step', () => {
  it('stops an ambiguous grammar with grammar_too_costly instead of spending seconds on a token', () => {
    // after k a's, k + 1 parses wait for their b's: the stacks grow with every character
    const ambiguous = parseGbnf('root ::= x\nx ::= "a" x "b" | "a" x | "c"')
    const texts = Array.from({ length: 5000 }, (_, i) => 'a'.repeat(1 + (i % 40)) + String(i))
    const c = new GrammarConstraint(ambiguous, texts, [])
    expect(() => texts.map((_, t) => c.allows(t))).toThrow(/grammar is stopped/)
  })
})
