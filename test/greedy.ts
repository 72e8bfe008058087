import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { REPO_ROOT } from './models'

export interface GreedyRun {
  readonly modelPath: string
  readonly architecture: string
  readonly tokens: number[]
}

/**
 * Each model's greedy continuation of "Once upon a time" in node-llama-cpp, loaded in a child
 * process so that a model llama.cpp aborts on fails the test instead of killing the runner.
 */
export function greedyInChild(paths: readonly string[], steps: number): Promise<GreedyRun[]> {
  const script = join(REPO_ROOT, 'test/greedy-child.ts')
  return new Promise((resolve, reject) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', script, String(steps), ...paths],
      { cwd: REPO_ROOT },
      (error, stdout, stderr) => {
        const runs = stdout
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as GreedyRun)
        if (error)
          reject(
            new Error(
              `llama.cpp failed after loading ${runs.length} of ${paths.length} models (${paths[runs.length]}): ` +
                `${stderr.trim().split('\n').slice(-5).join(' | ')}`,
            ),
          )
        else resolve(runs)
      },
    )
  })
}
