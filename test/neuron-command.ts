// Test helper: runs the `neuron` command (bin/neuron.js) to its end, as a shell would, for the cli/ tests.
import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { REPO_ROOT } from './models'

const NEURON = join(REPO_ROOT, 'bin/neuron.js')

export function neuron(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [NEURON, ...args], { cwd: REPO_ROOT }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr })
    })
  })
}
