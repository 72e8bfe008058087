import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    include: ['**/*.test.ts'],
    // e2e/ specs drive Debian's Chromium against real processes; they run with everything else.
    exclude: ['**/node_modules/**', '**/.build/**', 'dist/**'],
    // Tests load real models and spawn real processes on a 2-core machine.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    fileParallelism: false,
  },
})
