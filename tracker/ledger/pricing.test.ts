// Prices: by model size unless configured, read from the environment, and what a host's range earns in an hour.
import { describe, expect, it } from 'vitest'
import { defaultPrice, hostMicroPerHour, pricingFromEnv } from './pricing'

describe('pricing', () => {
  it('prices by model size unless configured, and reads prices and fee from the environment', async () => {
    expect(defaultPrice({ bytesPerBlock: [1e6] })).toEqual({ promptMicroPerToken: 25, completionMicroPerToken: 100 })
    expect(defaultPrice({ bytesPerBlock: Array(10).fill(7e9) })).toEqual({
      promptMicroPerToken: 1750,
      completionMicroPerToken: 7000,
    })
    expect(pricingFromEnv({ NEURON_PRICES: '{"toy":{"prompt":5,"completion":20}}', NEURON_FEE_BPS: '500' })).toEqual({
      prices: { toy: { promptMicroPerToken: 5, completionMicroPerToken: 20 } },
      feeBps: 500,
    })
    expect(() => pricingFromEnv({ NEURON_FEE_BPS: '20000' })).toThrow(/basis points/)
    expect(() => pricingFromEnv({ NEURON_PRICES: '{"toy":{"prompt":-1}}' })).toThrow(/NEURON_PRICES/)
  })

  it('tells a host what a range earns in an hour: its share of each completion token, less the fee', async () => {
    const price = { promptMicroPerToken: 25, completionMicroPerToken: 1000 }
    // Half of a 10-block model: 500 micro-credits a token, 450 after a 10 % fee, 2 tokens/s for 3600 s.
    expect(hostMicroPerHour(price, 1000, 10, [0, 5], 2)).toBe(450 * 2 * 3600)
    expect(hostMicroPerHour(price, 0, 10, [0, 10], 1)).toBe(1000 * 3600)
  })
})
