import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vite'

// The `neuron` command compiled to JavaScript (bin/neuron.js runs it): one ES module for Node, every package in
// node_modules left to Node to load, so nothing is compiled when a command runs.
export default defineConfig({
  build: {
    ssr: fileURLToPath(new URL('./cli/main.ts', import.meta.url)),
    outDir: fileURLToPath(new URL('./dist/cli', import.meta.url)),
    emptyOutDir: true,
    target: 'node20',
    sourcemap: true,
    rollupOptions: { output: { format: 'es', entryFileNames: 'main.mjs' } },
  },
  ssr: { target: 'node', noExternal: [] },
})
