import { GatewayError } from './errors'

// JSON schemas (the subset below) written as GBNF grammars the last hop's sampler holds output to. The JSON they
// allow is laid out as node-llama-cpp renders a tool call's arguments: ", " and ": " between items, no other spaces.

/** Keywords a schema may use: what they constrain, or (the last line) what they only describe. */
const SUPPORTED = new Set([
  'type',
  'properties',
  'required',
  'additionalProperties',
  'items',
  'minItems',
  'maxItems',
  'enum',
  'const',
  'anyOf',
  'oneOf',
  'minLength',
  'maxLength',
  ...['description', 'title', '$schema', 'examples', 'default', 'strict'],
])
/** How deep schemas may nest, and the largest count a bound (maxLength, maxItems) may give. */
const MAX_DEPTH = 16
const MAX_COUNT = 200

const PRIMITIVES = `string ::= "\\"" char* "\\""
char ::= [^"\\\\\\x00-\\x1f] | "\\\\" (["\\\\/bfnrt] | "u" [0-9a-fA-F]{4})
integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
number ::= integer ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,3})?
boolean ::= "true" | "false"
null ::= "null"
value ::= object | array | string | number | boolean | null
object ::= "{" (string ": " value (", " string ": " value)*)? "}"
array ::= "[" (value (", " value)*)? "]"`

/** A GBNF literal for `text` (GBNF's escapes are JSON's). */
export function gbnfLiteral(text: string): string {
  return JSON.stringify(text)
}

/** Grammar rules built from schemas, each rule named once; `rules()` is the GBNF text with the shared primitives. */
export class GrammarBuilder {
  private readonly lines: string[] = []
  private next = 0

  constructor(
    /** The request parameter a schema came from, named in errors. */
    private readonly param: string,
  ) {}

  /** A new rule `body`; returns its name. */
  rule(body: string, hint = 'r'): string {
    const name = `${hint}-${this.next++}`
    this.lines.push(`${name} ::= ${body}`)
    return name
  }

  /** The rule of any JSON object (response_format json_object). */
  anyObject(): string {
    return 'object'
  }

  /** The rule of values valid against `schema` (refused with a 400 naming the first keyword outside the subset). */
  schema(schema: unknown, path = '', depth = 0): string {
    if (depth > MAX_DEPTH) this.refuse(path, `schemas nest deeper than ${MAX_DEPTH}`)
    if (schema === true || (isObject(schema) && Object.keys(schema).length === 0)) return 'value'
    if (!isObject(schema)) return this.refuse(path, 'a schema is a JSON object')
    for (const key of Object.keys(schema))
      if (!SUPPORTED.has(key)) this.refuse(path, `the keyword "${key}" is not supported`)
    if ('const' in schema) return this.rule(gbnfLiteral(JSON.stringify(schema.const)), 'const')
    if (Array.isArray(schema.enum))
      return this.rule(schema.enum.map((v) => gbnfLiteral(JSON.stringify(v))).join(' | ') || '"null"', 'enum')
    const alternatives = schema.anyOf ?? schema.oneOf
    if (alternatives !== undefined) {
      if (!Array.isArray(alternatives) || alternatives.length === 0)
        this.refuse(path, 'anyOf/oneOf is a non-empty array of schemas')
      return this.rule(alternatives.map((s, i) => this.schema(s, `${path}/anyOf/${i}`, depth + 1)).join(' | '), 'any')
    }
    const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? ['object'] : [schema.type]
    return this.rule(types.map((t) => this.typed(schema, t, path, depth)).join(' | '), 'v')
  }

  rules(root: string): string {
    return [`root ::= ${root}`, ...this.lines, PRIMITIVES].join('\n')
  }

  private typed(schema: Record<string, unknown>, type: unknown, path: string, depth: number): string {
    switch (type) {
      case 'string': {
        const max = this.count(schema.maxLength, 'maxLength', path)
        const min = this.count(schema.minLength, 'minLength', path) ?? 0
        if (max === undefined && min === 0) return 'string'
        return this.rule(`"\\"" char{${min},${max ?? ''}} "\\""`, 'str')
      }
      case 'integer':
      case 'number':
      case 'boolean':
      case 'null':
        return type
      case 'array':
        return this.array(schema, path, depth)
      case 'object':
        return this.object(schema, path, depth)
      default:
        return this.refuse(
          path,
          `the type ${JSON.stringify(type)} is not one of string, number, integer, boolean, null, array, object`,
        )
    }
  }

  private array(schema: Record<string, unknown>, path: string, depth: number): string {
    const item = schema.items === undefined ? 'value' : this.schema(schema.items, `${path}/items`, depth + 1)
    const min = this.count(schema.minItems, 'minItems', path) ?? 0
    const max = this.count(schema.maxItems, 'maxItems', path)
    if (max !== undefined && max < min) this.refuse(path, 'maxItems is below minItems')
    if (max === 0) return this.rule('"[]"', 'arr')
    const more = `(", " ${item}){${Math.max(0, min - 1)},${max === undefined ? '' : max - 1}}`
    return this.rule(min === 0 ? `"[" (${item} ${more})? "]"` : `"[" ${item} ${more} "]"`, 'arr')
  }

  /** Declared properties in their order, the required ones always, the others optional; nothing else. */
  private object(schema: Record<string, unknown>, path: string, depth: number): string {
    const extra = schema.additionalProperties
    if (extra !== undefined && extra !== false)
      this.refuse(path, 'additionalProperties must be false or absent (only declared properties are generated)')
    if (schema.properties === undefined) return 'object'
    if (!isObject(schema.properties)) return this.refuse(path, 'properties is an object of schemas')
    const required = new Set(Array.isArray(schema.required) ? schema.required : [])
    const names = Object.keys(schema.properties)
    for (const r of required)
      if (!names.includes(String(r))) this.refuse(path, `required property "${String(r)}" is not among the properties`)
    const kv = names.map(
      (n) =>
        `${gbnfLiteral(JSON.stringify(n))} ": " ` +
        `${this.schema((schema.properties as Record<string, unknown>)[n], `${path}/properties/${n}`, depth + 1)}`,
    )
    // after[i]: properties i.. after one was written (each with its comma); first[i]: none written yet.
    let after = this.rule('""', 'after')
    let first = this.rule('""', 'first')
    for (let i = names.length - 1; i >= 0; i--) {
      const must = required.has(names[i])
      const nextAfter = this.rule(must ? `", " ${kv[i]} ${after}` : `(", " ${kv[i]})? ${after}`, 'after')
      first = this.rule(must ? `${kv[i]} ${after}` : `${kv[i]} ${after} | ${first}`, 'first')
      after = nextAfter
    }
    return this.rule(`"{" ${first} "}"`, 'obj')
  }

  private count(value: unknown, keyword: string, path: string): number | undefined {
    if (value === undefined) return undefined
    if (typeof value !== 'number' || !Number.isInteger(value) || value < 0 || value > MAX_COUNT)
      this.refuse(path, `${keyword} must be an integer from 0 to ${MAX_COUNT}`)
    return value
  }

  private refuse(path: string, what: string): never {
    throw new GatewayError(
      400,
      'invalid_request_error',
      'unsupported_schema',
      `the JSON schema at "${path || '/'}" is refused: ${what}.`,
      this.param,
    )
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}
