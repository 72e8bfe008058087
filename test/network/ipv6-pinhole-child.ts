// The host's PCP pinhole client run inside a namespace (the test runner is on no namespace's network): one MAP,
// its grant or its error printed as one JSON line. Usage: node --import tsx ipv6-pinhole-child.ts '{"router":…}'
import { requestPinhole } from '../../host/network/pinhole-pcp'

const args = JSON.parse(process.argv[2] ?? '{}') as {
  router: string
  address: string
  port: number
  lifetimeS: number
  nonce: string
}
try {
  const grant = await requestPinhole({
    router: args.router,
    internal: args.address,
    port: args.port,
    lifetimeS: args.lifetimeS,
    nonce: Buffer.from(args.nonce, 'hex'),
  })
  process.stdout.write(`${JSON.stringify(grant)}\n`)
} catch (error) {
  process.stdout.write(`${JSON.stringify({ error: (error as Error).message })}\n`)
}
