import { randomBytes } from 'node:crypto'
import { mkdir, open, rename, unlink } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { z } from 'zod'
import { syncDir } from '../../identity/keys'
import { describeIssues } from '../../protocol'

/**
 * Replaces `path` with `text`, whole or not at all: written to a temp file of its own beside it (so
 * concurrent writers never share one), fsynced, renamed over, and the folder fsynced so the rename
 * survives a power cut.
 */
export async function writeFileDurably(path: string, text: string, mode = 0o600): Promise<void> {
  const dir = dirname(path)
  await mkdir(dir, { recursive: true })
  const temp = `${path}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`
  try {
    const file = await open(temp, 'wx', mode)
    try {
      await file.writeFile(text)
      await file.sync()
    } finally {
      await file.close()
    }
    await rename(temp, path)
  } catch (error) {
    await unlink(temp).catch(() => {})
    throw error
  }
  await syncDir(dir)
}

/**
 * Renames a file that cannot be read to `<path>.corrupt-<time>`, so nothing in it is lost and a new
 * one can take its place; returns where it went.
 */
export async function keepAside(path: string, now = new Date()): Promise<string> {
  const aside = `${path}.corrupt-${now.toISOString().replace(/[:.]/g, '-')}`
  await rename(path, aside)
  await syncDir(dirname(path))
  return aside
}

/** A file's text as JSON parsed by `schema`, or why it is not that (naming the file). */
export function parseJsonFile<T>(path: string, text: string, schema: z.ZodType<T>): { value: T } | { problem: string } {
  let raw: unknown
  try {
    raw = JSON.parse(text)
  } catch (error) {
    return { problem: `${path} is not JSON (${error instanceof Error ? error.message : error})` }
  }
  const parsed = schema.safeParse(raw)
  return parsed.success ? { value: parsed.data } : { problem: describeIssues(path, parsed.error) }
}
