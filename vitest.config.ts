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
    // Every test's clients come from loopback, one network prefix, and most are not about grants: no proof of work (a
    // new key is granted on its first route.plan) and no daily bound, unless a test sets its own
    // (test/grant-farming.test.ts, tracker/tickets/ticket-office.test.ts). Spawned trackers inherit these.
    env: { NEURON_GRANT_WORK_BITS: '0', NEURON_GRANTS_PER_PREFIX_PER_DAY: '1000000' },
  },
})
