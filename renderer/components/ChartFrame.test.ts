import { createElement } from 'react'
import { renderToStaticMarkup } from 'react-dom/server'
import { describe, expect, it } from 'vitest'
import { ChartFrame, timeDomain } from './ChartFrame'

describe('a chart frame', () => {
  it('spans the time axis over the points’ times, so points sit by time and not by index', () => {
    expect(timeDomain([7_200_000, 3_600_000, 36_000_000])).toEqual([3_600_000, 36_000_000])
    // one point: an hour either side, so it has an axis to sit on
    expect(timeDomain([3_600_000])).toEqual([0, 7_200_000])
  })

  it('is a figure named and described for screen readers', () => {
    const props = { label: 'Credits earned over time', description: 'Over 2 hours…', children: createElement('svg') }
    const html = renderToStaticMarkup(createElement(ChartFrame, props))
    expect(html).toContain('<figure class="chart"')
    expect(html).toContain('aria-label="Credits earned over time"')
    const describedBy = /aria-describedby="([^"]+)"/.exec(html)?.[1]
    expect(html).toContain(`<figcaption id="${describedBy}" class="visually-hidden">Over 2 hours…</figcaption>`)
  })
})
