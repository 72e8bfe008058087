import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { DEEPSEEK_V4_FLASH } from '../test/model-configs'
import { REPO_ROOT } from '../test/models'

const dirs: string[] = []
afterAll(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true })
})

function neuron(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [join(REPO_ROOT, 'bin/neuron.js'), ...args],
      { cwd: REPO_ROOT },
      (error, stdout, stderr) => {
        resolve({ code: error === null ? 0 : typeof error.code === 'number' ? error.code : 1, stdout, stderr })
      },
    )
  })
}

describe('neuron inspect --config previews serving a large target', () => {
  it(
    'DeepSeek-V4-Flash: hosts per route at 12 GB usable (or --usable), bytes per token across a cut, cache per ' +
      'token at 128K',
    async () => {
      const dir = await mkdtemp(join(tmpdir(), 'neuron-inspect-'))
      dirs.push(dir)
      await mkdir(join(dir, 'DeepSeek-V4-Flash'))
      const config = join(dir, 'DeepSeek-V4-Flash', 'config.json')
      await writeFile(config, JSON.stringify(DEEPSEEK_V4_FLASH))
      const r = await neuron('inspect', '--config', config)
      expect(r.code, r.stderr).toBe(0)
      expect(r.stdout).toContain('DeepSeek-V4-Flash — deepseek4, 43 blocks')
      expect(r.stdout).toContain('+ 1.00 KiB/token of the last 128, + 80.0 KiB per session')
      expect(r.stdout).toContain('hosts         16 per route at 12 GB usable, 2–3 blocks each')
      expect(r.stdout).toContain('seams         32.0 KiB per token across a cut (f16)')
      expect(r.stdout).toContain('cache at 128K 7.06 KiB per token')
      const json = await neuron('inspect', '--config', config, '--usable', '24', '--json')
      const parsed = JSON.parse(json.stdout)
      expect(parsed.serving.ranges).toHaveLength(8)
      expect(parsed.seams[0]).toEqual({ cut: true, values: 4 * 4096, tokenIds: true, int32PerToken: 0 })
      const bad = await neuron('inspect', '--config', config, '--usable', 'lots')
      expect(bad.code).toBe(1)
      expect(bad.stderr).toMatch(/--usable takes the GB of memory each host may use/)
    },
  )
})
