import { fileURLToPath } from 'node:url'
import type { ForgeConfig } from '@electron-forge/shared-types'

// Native binaries must stay real files outside app.asar: node-llama-cpp's ggml/llama libraries
// (.so/.dylib/.dll, Metal shaders), better-sqlite3, and our addon native/build/Release/neuron_native.node.
export const NATIVE_UNPACK = '**/*.{node,so,dylib,dll,metal}'

/** Paths (relative to the repo root, with a leading slash) that never ship in the app. */
export const PACKAGE_IGNORE: RegExp[] = [
  /^\/(test|bench|e2e|test-results|out|build|renderer|\.cache|\.bench|\.ci|\.github|\.vscode|\.tsbuild)(\/|$)/,
  // The default model ships once, as an extra resource beside app.asar (DEFAULT_MODEL_RESOURCE), not inside it.
  /^\/resources\/models(\/|$)/,
  /^\/electron\/__mocks__\//,
  /\.test\.tsx?$/,
  /\.map$/,
  // The addon's sources and headers; only its built .node ships.
  /^\/native\/(src\/|\.build\/|binding\.gyp$|build\.mjs$)/,
  /^\/native\/build\/(?!Release(\/|$))/,
  /^\/native\/build\/Release\/obj\.target(\/|$)/,
  /^\/(tsconfig.*\.json|biome\.json)$/,
  /^\/(vite.*\.config\.ts|vitest\.config\.ts|forge\.config\.ts|electron-builder\.config\.ts)$/,
]

/**
 * The embedded swarm's default model (stories260K, MIT, 1.2 MB), which the repository ships
 * (resources/models/README.md). It lands in the app's resources
 * folder, where electron/backend/default-model.ts looks first.
 */
export const DEFAULT_MODEL_RESOURCE = fileURLToPath(new URL('./resources/models/stories260K.gguf', import.meta.url))
/** Its MIT licence, which must travel with every copy. */
export const DEFAULT_MODEL_LICENSE = fileURLToPath(new URL('./resources/models/LICENSE-stories260K', import.meta.url))

/**
 * `electron-forge package` makes out/Neuron-<platform>-<arch>; installers are then built from it by
 * electron-builder (electron-builder.config.ts, `--prepackaged`). Forge's zip maker gives a portable archive.
 */
const config: ForgeConfig = {
  packagerConfig: {
    name: 'Neuron',
    executableName: 'neuron',
    appBundleId: 'dev.neuron.app',
    appCategoryType: 'public.app-category.utilities',
    appCopyright: 'MIT License',
    // build/icon.icns on macOS, build/icon.ico on Windows.
    icon: 'build/icon',
    asar: { unpack: NATIVE_UNPACK },
    ignore: PACKAGE_IGNORE,
    prune: true,
    extraResource: [DEFAULT_MODEL_RESOURCE, DEFAULT_MODEL_LICENSE],
    win32metadata: {
      CompanyName: 'Neuron',
      ProductName: 'Neuron',
      FileDescription: 'Neuron: run large language models together',
    },
  },
  // Only better-sqlite3 is built against V8's ABI; the other addons (ours, node-llama-cpp's, utp-native,
  // bufferutil, utf-8-validate) use Node-API and load in Electron as built.
  rebuildConfig: { onlyModules: ['better-sqlite3'], force: true },
  makers: [{ name: '@electron-forge/maker-zip', config: {}, platforms: ['darwin', 'linux', 'win32'] }],
  plugins: [{ name: '@electron-forge/plugin-auto-unpack-natives', config: {} }],
}

export default config
