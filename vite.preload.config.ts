import { defineConfig } from 'vite'

// The sandboxed preload can require only `electron` (and a few builtins), so it ships as one CommonJS
// file with protocol/ and zod inlined: dist/electron/preload.cjs.
export default defineConfig({
  publicDir: false,
  build: {
    outDir: 'dist/electron',
    emptyOutDir: true,
    target: 'es2023',
    minify: false,
    reportCompressedSize: false,
    lib: { entry: 'electron/preload/preload.ts', formats: ['cjs'], fileName: () => 'preload.cjs' },
    rolldownOptions: { external: ['electron'] },
  },
})
