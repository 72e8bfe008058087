// The layout is the architecture (see docs/architecture.md): these checks keep it that way, with a
// message that names the file to move or split. `tsc -b` enforces the same boundaries through each
// folder's tsconfig.json references; this test also catches cycles, oversized files and long lines.
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { REPO_ROOT } from './models'

const tracked = execFileSync('git', ['ls-files', '--cached', '--others', '--exclude-standard'], {
  cwd: REPO_ROOT,
  encoding: 'utf8',
})
  .split('\n')
  .filter((f) => f !== '' && existsSync(join(REPO_ROOT, f)))
const sources = tracked.filter((f) => /\.(ts|tsx)$/.test(f) && !f.endsWith('.d.ts'))
const isTest = (f: string) =>
  /\.test\.tsx?$/.test(f) ||
  /^(test|bench|e2e|build)\//.test(f) ||
  f.startsWith('electron/__mocks__/') ||
  !f.includes('/')

/** Relative imports of a file, resolved to repository paths (type-only imports included). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(REPO_ROOT, file), 'utf8')
  const out: string[] = []
  for (const m of text.matchAll(
    /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g,
  )) {
    const spec = m[1] ?? m[2]
    if (spec === undefined) continue
    const base = relative(REPO_ROOT, join(REPO_ROOT, dirname(file), spec))
    const hit = ['', '.ts', '.tsx', '/index.ts'].map((e) => base + e).find((p) => sources.includes(p))
    if (hit !== undefined) out.push(hit)
  }
  return out
}

/** Source files the size rules cover (C++ and CSS too), with their text. */
const sourceTexts = tracked
  .filter((f) => /\.(ts|tsx|css|cpp|h|mjs|js)$/.test(f) && !f.endsWith('.d.ts'))
  .map((f) => ({ f, text: readFileSync(join(REPO_ROOT, f), 'utf8') }))
/** The one file that writes ledger transactions (a named method per kind of write). */
const LEDGER = 'tracker/ledger/ledger.ts'
/** biome's line width (biome.json) and native/.clang-format's column limit. */
const MAX_LINE = 120

const graph = new Map(sources.map((f) => [f, importsOf(f)]))

/** Which program or library a file belongs to, by its folder. */
function room(file: string): string {
  const [top, second] = file.split('/')
  if (top === 'electron') return second === 'backend' ? 'electron/backend' : 'electron'
  return top ?? file
}

/** What each room's product code may import (besides itself); tests may import anything. */
const ALLOWED: Record<string, readonly string[]> = {
  protocol: [],
  gguf: ['protocol'],
  identity: ['protocol'],
  dataplane: ['protocol', 'identity'],
  text: ['protocol'],
  client: ['protocol', 'identity', 'dataplane', 'text'],
  native: ['protocol', 'gguf'],
  host: ['protocol', 'gguf', 'identity', 'dataplane', 'text', 'native'],
  tracker: ['protocol', 'gguf', 'identity', 'dataplane', 'text', 'client'],
  'electron/backend': ['protocol', 'gguf', 'identity', 'dataplane', 'text', 'client', 'native', 'host', 'tracker'],
  electron: ['protocol', 'electron/backend'],
  cli: [
    'protocol',
    'gguf',
    'identity',
    'dataplane',
    'text',
    'client',
    'native',
    'host',
    'tracker',
    'electron/backend',
    'electron',
  ],
  renderer: ['protocol'],
}

describe('the layout', () => {
  it('product code imports only the rooms its program may use, and never test helpers or the CLI', () => {
    const wrong: string[] = []
    for (const [file, deps] of graph) {
      if (isTest(file)) continue
      const from = room(file)
      const allowed = ALLOWED[from]
      if (allowed === undefined) {
        wrong.push(`${file}: product code outside the known rooms (${Object.keys(ALLOWED).join(', ')})`)
        continue
      }
      for (const dep of deps) {
        const to = room(dep)
        if (to !== from && !allowed.includes(to))
          wrong.push(`${file} imports ${dep}: ${from} may import only ${allowed.join(', ') || 'nothing of ours'}`)
        if (isTest(dep)) wrong.push(`${file} imports ${dep}: test code is never imported by product code`)
      }
    }
    expect(wrong).toEqual([])
  })

  it('has no import cycle', () => {
    // Tarjan's strongly connected components: any component of more than one file is a cycle.
    const index = new Map<string, number>()
    const low = new Map<string, number>()
    const stack: string[] = []
    const onStack = new Set<string>()
    const cycles: string[][] = []
    let next = 0
    const visit = (v: string) => {
      index.set(v, next)
      low.set(v, next)
      next++
      stack.push(v)
      onStack.add(v)
      for (const w of graph.get(v) ?? []) {
        if (!index.has(w)) {
          visit(w)
          low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0))
        } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0))
      }
      if (low.get(v) === index.get(v)) {
        const component: string[] = []
        let w: string | undefined
        do {
          w = stack.pop()
          if (w === undefined) break
          onStack.delete(w)
          component.push(w)
        } while (w !== v)
        if (component.length > 1) cycles.push(component.sort())
      }
    }
    for (const v of graph.keys()) if (!index.has(v)) visit(v)
    expect(cycles).toEqual([])
  })

  it('keeps every source file under 400 lines, so each has one reason to change', () => {
    const long = sourceTexts
      .map(({ f, text }) => ({ f, lines: text.split('\n').length - (text.endsWith('\n') ? 1 : 0) }))
      .filter(({ lines }) => lines > 400)
      .map(({ f, lines }) => `${f}: ${lines} lines`)
    expect(long).toEqual([])
  })

  it('writes credits only through the Ledger: no post to the ledger store outside tracker/ledger/ledger.ts', () => {
    const posting = sources
      .filter((f) => f.startsWith('tracker/') && !isTest(f) && f !== LEDGER)
      .filter((f) => /\.post\(/.test(readFileSync(join(REPO_ROOT, f), 'utf8')))
      .map((f) => `${f} posts to the ledger store: add a named write to the Ledger (${LEDGER}) and call it`)
    expect(posting).toEqual([])
  })

  it('keeps every line within 120 characters, so a file near its budget is split, not squeezed', () => {
    const wide = sourceTexts.flatMap(({ f, text }) =>
      text.split('\n').flatMap((line, i) => {
        const width = [...line].length
        return width > MAX_LINE ? [`${f}:${i + 1}: ${width} characters`] : []
      }),
    )
    expect(wide).toEqual([])
  })
})
