// Electron's main entry ("main" in package.json). Electron ≥ 28 runs ESM entries; tsx loads the
// TypeScript unbundled, so the host's native modules resolve their files as they do under Node.
import { register } from 'tsx/esm/api'

register()
await import('./main.ts')
