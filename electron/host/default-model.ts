import { resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The embedded default: the real tiny model shared beside the repository (the demo's and the app's private swarm's). */
export const DEFAULT_MODEL = resolve(fileURLToPath(new URL('../../', import.meta.url)), '../shared/models/stories260K.gguf')
