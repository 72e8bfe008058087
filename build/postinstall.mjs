#!/usr/bin/env node
// After an install: the native addon always (it is built for this machine); the UI and the compiled CLI only in a
// checkout, where vite (a devDependency) is installed. A package installed from its tarball ships them built.
import { execFileSync } from 'node:child_process'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const run = (args) => execFileSync(process.execPath, args, { cwd: root, stdio: 'inherit' })

run([join(root, 'native', 'build.mjs')])
let hasVite = true
try {
  createRequire(join(root, 'package.json')).resolve('vite/package.json')
} catch {
  hasVite = false
}
if (hasVite)
  execFileSync(process.platform === 'win32' ? 'npm.cmd' : 'npm', ['run', 'build', '--silent'], {
    cwd: root,
    stdio: 'inherit',
  })
