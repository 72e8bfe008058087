// A Hub (or an HF_ENDPOINT mirror) that lies: every answer it sends is a network input. Against local HTTP servers
// playing a hostile Hub (the real one cannot be reached here): paths that climb out of the download folder, answers
// too large to buffer, endless redirects, a body longer than the size it stated. Each is refused with a typed error and
// nothing is written outside the data dir.

import { readdir } from 'node:fs/promises'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { NeuronError } from '../../protocol'
import { scratchDir } from '../../test/models'
import { HubApi } from './hub-api'
import { downloadHubFile } from './hub-download'
import { pullModel } from './pull'

let dir = ''
let cleanup = async () => {}
let server: Server
let endpoint = ''
let answer: (req: IncomingMessage, res: ServerResponse) => void = (_req, res) => res.end()

beforeAll(async () => {
  ;({ dir, cleanup } = await scratchDir('neuron-hostile-hub-'))
  server = createServer((req, res) => answer(req, res))
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
  await cleanup()
})

async function refusal(p: Promise<unknown>): Promise<NeuronError> {
  return p.then(
    () => {
      throw new Error('expected a refusal')
    },
    (e: NeuronError) => e,
  )
}

const SHA = 'a'.repeat(64)
const info = (res: ServerResponse) => res.end(JSON.stringify({ id: 'evil/model-GGUF', sha: 'b'.repeat(40) }))

describe('a hostile Hub (local servers playing one)', () => {
  it('refuses a tree whose file path climbs out of the download folder, writing nothing', async () => {
    answer = (req, res) => {
      if (req.url?.includes('/tree/'))
        return res.end(JSON.stringify([{ type: 'file', path: '../../escape.gguf', lfs: { oid: SHA, size: 10 } }]))
      info(res)
    }
    const data = join(dir, 'climb')
    const error = await refusal(pullModel({ ref: { repo: 'evil/model-GGUF' }, dataDir: data, config: { endpoint } }))
    expect(error.code).toBe('hub_bad_answer')
    expect(error.message).toMatch(/evil\/model-GGUF's files .* is HF_ENDPOINT a Hub\?/)
    expect(await readdir(dir)).not.toContain('escape.gguf')
  })

  it('stops reading an answer past its bound instead of buffering it (an endless JSON stream)', async () => {
    answer = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write('[')
      const chunk = `${JSON.stringify({ id: 'a/b' })},`.repeat(2000)
      const pump = () => {
        while (res.write(chunk)) if (res.writableLength > 1 << 20) break
      }
      res.on('drain', pump)
      pump()
    }
    const error = await refusal(new HubApi({ endpoint }).search('x'))
    expect(error.code).toBe('hub_bad_answer')
    expect(error.message).toMatch(/passed \d+ bytes/)
  })

  it('gives up on a redirect loop after a few hops, naming it', async () => {
    answer = (req, res) => {
      res.writeHead(302, { location: req.url ?? '/' })
      res.end()
    }
    const error = await refusal(new HubApi({ endpoint }).model('evil/model-GGUF'))
    expect(error.code).toBe('hub_bad_answer')
    expect(error.message).toMatch(/redirected evil\/model-GGUF too often/)
  })

  it('refuses a body longer than the file’s stated size and keeps nothing of it', async () => {
    answer = (_req, res) => {
      res.writeHead(200, { 'content-length': '64' })
      res.end(Buffer.alloc(64, 1))
    }
    const data = join(dir, 'long')
    const error = await refusal(
      downloadHubFile({
        api: new HubApi({ endpoint }),
        repo: 'evil/model-GGUF',
        revision: 'main',
        file: { path: 'm.gguf', bytes: 16, sha256: SHA },
        dir: data,
      }),
    )
    expect(error.code).toBe('hub_bad_answer')
    expect(error.message).toMatch(/sent more than the 16 bytes stated/)
    expect(await readdir(data).catch(() => [])).toEqual([])
  })
})
