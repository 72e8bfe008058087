#!/usr/bin/env node
// The `neuron` command: loads the TypeScript CLI through tsx, so no build step is needed.
import { register } from 'tsx/esm/api'

register()
const { main } = await import('../cli/main.ts')
process.exitCode = await main(process.argv.slice(2))
