// @silentbot1/nat-api ships no types: the surface Neuron uses (its index.js, version 0.4.9).
declare module '@silentbot1/nat-api' {
  interface MapOptions {
    publicPort: number
    privatePort: number
    protocol?: 'TCP' | 'UDP'
    description?: string
    ttl?: number
  }
  export default class NatAPI {
    constructor(options?: {
      ttl?: number
      description?: string
      gateway?: string
      autoUpdate?: boolean
      enablePMP?: boolean
      enableUPNP?: boolean
    })
    map(options: MapOptions): Promise<boolean>
    unmap(options: MapOptions): Promise<boolean>
    externalIp(): Promise<string>
    destroy(): Promise<boolean>
  }
}
