#!/usr/bin/env node
// The `neuron` command. It runs the compiled CLI (dist/cli/main.mjs, `npm run build`: nothing is compiled when a
// command runs) unless a TypeScript source is newer than it, as in a checkout being edited: then it loads the sources
// through tsx, so a change is never run stale.
import { existsSync, readdirSync, statSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const compiled = join(root, 'dist', 'cli', 'main.mjs')
/** The folders the CLI's code comes from. */
const SOURCES = ['cli', 'client', 'electron', 'gguf', 'host', 'identity', 'native', 'protocol', 'tracker']

/** Whether any .ts file under `dir` was changed after `since` (ms). */
function changedAfter(dir, since) {
  if (!existsSync(dir)) return false
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) {
      if (entry.name !== 'build' && entry.name !== 'node_modules' && changedAfter(path, since)) return true
    } else if (entry.name.endsWith('.ts') && statSync(path).mtimeMs > since) return true
  }
  return false
}

async function load() {
  if (existsSync(compiled)) {
    // only a checkout is edited: an installed package runs its build without looking at every source first
    if (!existsSync(join(root, '.git'))) return import(compiled)
    const builtAt = statSync(compiled).mtimeMs
    if (!SOURCES.some((dir) => changedAfter(join(root, dir), builtAt))) return import(compiled)
  }
  const { register } = await import('tsx/esm/api')
  register()
  return import('../cli/main.ts')
}

const { main } = await load()
const code = await main(process.argv.slice(2))
// A command that failed may leave connections open (a host refused by its tracker still holds its socket and its
// signal handlers): the process ends with its error line, not when those close.
if (code !== 0) process.exit(code)
process.exitCode = code
