import type { Configuration } from 'electron-builder'

/**
 * Installers: AppImage + deb (Linux), NSIS (Windows), dmg (macOS). Built from the app Forge packaged,
 * `electron-builder --prepackaged out/Neuron-<platform>-<arch> -c electron-builder.config.ts`, so the
 * `files` and `asarUnpack` below apply only when electron-builder packages by itself.
 */
const config: Configuration = {
  appId: 'dev.neuron.app',
  productName: 'Neuron',
  executableName: 'neuron',
  copyright: 'MIT License',
  directories: { buildResources: 'build', output: 'out/installers' },
  files: [
    '**/*',
    '!{test,bench,e2e,test-results,out,renderer,.cache,.bench,.ci,.tsbuild}/**',
    '!electron/__mocks__/**',
    '!**/*.test.{ts,tsx}',
    '!**/*.map',
    '!native/{src,.build}/**',
    '!native/{binding.gyp,build.mjs}',
    '!native/build/Release/obj.target/**',
    '!resources/models/**',
    '!{tsconfig*.json,biome.json,vite*.config.ts,vitest.config.ts,forge.config.ts,electron-builder.config.ts}',
  ],
  // The default model beside app.asar, where electron/backend/default-model.ts looks (as Forge's extraResource).
  extraResources: [
    { from: 'resources/models/stories260K.gguf', to: 'stories260K.gguf' },
    { from: 'resources/models/LICENSE-stories260K', to: 'LICENSE-stories260K' },
  ],
  asarUnpack: ['**/*.{node,so,dylib,dll,metal}'],
  // better-sqlite3 is the one addon built against V8's ABI (see forge.config.ts rebuildConfig).
  npmRebuild: true,
  linux: {
    target: ['AppImage', 'deb'],
    category: 'Utility',
    desktop: { entry: { Categories: 'Utility;Network;', StartupWMClass: 'Neuron' } },
    synopsis: 'Run very large language models together on home computers',
  },
  deb: { packageCategory: 'net' },
  win: { target: 'nsis' },
  nsis: { oneClick: false, allowToChangeInstallationDirectory: true, perMachine: false },
  mac: { target: 'dmg', category: 'public.app-category.utilities', darkModeSupport: true },
  dmg: { title: 'Neuron' },
}

export default config
