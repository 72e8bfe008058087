#!/usr/bin/env node
// The `neuron` command: loads the TypeScript CLI through tsx, so no build step is needed.
import { register } from 'tsx/esm/api'

register()
const { main } = await import('../cli/main.ts')
const code = await main(process.argv.slice(2))
// A command that failed may leave connections open (a host refused by its tracker still holds its socket and its
// signal handlers): the process ends with its error line, not when those close.
if (code !== 0) process.exit(code)
process.exitCode = code
