// Where Neuron's own files are (the native addon, the renderer's build, the shipped model): the folder of its
// package.json, found from this module. A checkout runs these sources where they are; the compiled CLI runs them from
// chunks under dist/cli/, so a path relative to the module would point into dist. In gguf/: the lowest room of Node
// code that native/, electron/backend and cli/ may all import (protocol/ is the renderer's too, without Node).
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const NAME = 'neuron'

function isOurs(manifest: string): boolean {
  try {
    return (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown }).name === NAME
  } catch {
    return false
  }
}

/** The nearest folder above `from` whose package.json is Neuron's. */
export function findPackageRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json')) && isOurs(join(dir, 'package.json'))) return dir
    if (dirname(dir) === dir)
      throw new Error(`no package.json named "${NAME}" above ${from}: Neuron's files are not where its code is`)
  }
}

export const PACKAGE_ROOT = findPackageRoot(dirname(fileURLToPath(import.meta.url)))
