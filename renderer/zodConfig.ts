import { z } from 'zod'

// The page's CSP forbids eval. zod probes `new Function` when a schema is built, which the browser reports as a
// violation, so this runs before any schema exists: main.tsx imports it first.
z.config({ jitless: true })
