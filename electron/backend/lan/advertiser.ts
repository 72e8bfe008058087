import type { Bonjour, Service } from 'bonjour-service'
import { LAN_SERVICE_TYPE, type LanTxt } from '../../../protocol'

/**
 * This app's `_neuron._tcp` advertisement: its tracker's port in SRV, and in TXT its node id, key, name
 * and pairing port. Withdrawn with a goodbye, so browsers drop it at once rather than at its TTL.
 */
export class LanAdvertiser {
  private constructor(private readonly service: Service) {}

  static publish(bonjour: Bonjour, txt: LanTxt): LanAdvertiser {
    const service = bonjour.publish({
      // Instance names must be unique on the link: the name carries the node id's short form after the hostname.
      name: txt.name,
      type: LAN_SERVICE_TYPE,
      port: txt.port,
      txt: { ...txt, port: String(txt.port), pair: String(txt.pair) },
      // Our names carry the node id, so probing for a clash would only delay the first answer.
      probe: false,
    })
    return new LanAdvertiser(service)
  }

  withdraw(): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, 1_000)
      this.service.stop?.(() => {
        clearTimeout(timer)
        resolve()
      })
    })
  }
}
