import { describe, expect, it } from 'vitest'
import type { SwarmView } from '../../../protocol/app'
import { IDLE_STATE } from '../../../protocol/host-state'
import { desktopView } from '../../../test/renderer/computer-fixtures'
import { hostRows, missingBlocks, onlineCount } from './selectors'

const host = (hostId: string, online: boolean) => ({
  hostId,
  online,
  profile: desktopView.profile,
  state: IDLE_STATE,
  lastSeen: 0,
})

const view: SwarmView = {
  trackerUrl: 'http://127.0.0.1:7070',
  hosts: [
    host('bbbbbbbbbbbbbbbbbbbb', false),
    {
      ...host('aaaaaaaaaaaaaaaaaaaa', true),
      state: {
        ...IDLE_STATE,
        modelId: 'stories260k',
        blocks: [0, 3] as const,
        status: 'ready' as const,
        msPerBlock: 2.345,
        activeSessions: 1,
        maxSessions: 4,
      },
    },
  ],
  models: [],
  thisHostId: 'aaaaaaaaaaaaaaaaaaaa',
  paired: [{ hostId: 'bbbbbbbbbbbbbbbbbbbb', name: 'kitchen' }],
}

describe('swarm selectors', () => {
  it('lists online hosts first with their model, range and speed', () => {
    const rows = hostRows(view)
    expect(rows.map((r) => r.shortId)).toEqual(['aaaaaaaa', 'bbbbbbbb'])
    expect(rows[0]).toMatchObject({
      model: 'stories260k',
      blocks: 'layers 1–3',
      status: 'ready',
      msPerBlock: '2.3 ms',
      cpu: '8c/16t',
      ram: '32.0 GB',
    })
    expect(rows[1]).toMatchObject({ model: '—', blocks: '—', msPerBlock: '—' })
    expect(onlineCount(view)).toBe(1)
  })

  it('tells this computer and the computers paired at home from other hosts', () => {
    expect(hostRows(view).map((r) => r.who)).toEqual(['this computer', 'kitchen'])
    expect(hostRows({ ...view, thisHostId: 'c'.repeat(20), paired: [] }).map((r) => r.who)).toEqual(['', ''])
  })

  it('says how this app reaches each host: direct, punched through the routers, relayed, or not yet', () => {
    const relayedHost = (hostId: string) => ({ ...host(hostId, true), state: { ...IDLE_STATE, endpoint: null } })
    const withPaths: SwarmView = {
      ...view,
      thisHostId: 'f'.repeat(20),
      hosts: [
        { ...host('d'.repeat(20), true), state: { ...IDLE_STATE, endpoint: 'wss://198.51.100.7:7071' } },
        relayedHost('p'.repeat(20)),
        relayedHost('r'.repeat(20)),
        relayedHost('u'.repeat(20)),
      ],
      reached: [
        { hostId: 'p'.repeat(20), path: 'punched' },
        { hostId: 'r'.repeat(20), path: 'relayed' },
      ],
    }
    const rows = hostRows(withPaths)
    expect(rows.map((r) => [r.shortId[0], r.path])).toEqual([
      ['d', 'direct'],
      ['p', 'punched'],
      ['r', 'relayed'],
      ['u', '—'],
    ])
    expect(rows[1]?.pathTitle).toMatch(/no relay carries its traffic/)
  })

  it("says how this computer's host forwards to the next hops it was given: punched, or through the client", () => {
    const relayedHost = (hostId: string) => ({ ...host(hostId, true), state: { ...IDLE_STATE, endpoint: null } })
    const rows = hostRows({
      ...view,
      thisHostId: 'f'.repeat(20),
      hosts: [relayedHost('p'.repeat(20)), relayedHost('r'.repeat(20)), relayedHost('u'.repeat(20))],
      seams: [
        { hostId: 'p'.repeat(20), path: 'punched' },
        { hostId: 'r'.repeat(20), path: 'relayed' },
      ],
    })
    expect(rows.map((r) => [r.shortId[0], r.seam])).toEqual([
      ['p', 'punched'],
      ['r', 'through the client'],
      ['u', ''],
    ])
    expect(rows[1]?.seamTitle).toMatch(/client carries the hidden states/)
  })

  it('counts the blocks nobody serves', () => {
    expect(missingBlocks([2, 0, 1, 0])).toBe(2)
  })
})
