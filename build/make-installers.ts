// Builds the installers (electron-builder.config.ts) from the app `electron-forge package` wrote to
// out/Neuron-<platform>-<arch>, for this machine's platform. Run by `npm run make`.
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { build } from 'electron-builder'
import config from '../electron-builder.config'

const root = join(import.meta.dirname, '..')
const prepackaged = join(root, 'out', `Neuron-${process.platform}-${process.arch}`)
if (!existsSync(prepackaged)) {
  throw new Error(`${prepackaged} does not exist; run \`npm run package\` first (Electron Forge writes it)`)
}
const artifacts = await build({ projectDir: root, prepackaged, config })
for (const file of artifacts) console.log(file)
