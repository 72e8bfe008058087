import { constants } from 'node:fs'
import { access, copyFile, mkdir, stat } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { NeuronError } from '../../protocol'
import { SettingsStore } from './settings-store'

/** Refuses a data dir that is missing, a file, or not writable by this user, saying which. */
export async function checkWritableDir(dir: string): Promise<void> {
  const info = await stat(dir).catch(() => undefined)
  if (info === undefined) throw new NeuronError('bad_request', `the data dir ${dir} does not exist; create the folder first, or pick another`)
  if (!info.isDirectory()) throw new NeuronError('bad_request', `the data dir ${dir} is a file, not a folder; pick a folder`)
  try {
    await access(dir, constants.W_OK)
  } catch {
    throw new NeuronError('bad_request', `the data dir ${dir} is not writable by this user; pick a folder you own`)
  }
}

/**
 * The data dir this run uses: the given one, unless its settings name another (a change made in
 * the app applies at the next start); the identity comes along the first time.
 */
export async function resolveDataDir(given: string, log: (line: string) => void): Promise<string> {
  await mkdir(given, { recursive: true })
  const moved = (await SettingsStore.open(given)).value.dataDir
  if (moved === null || resolve(moved) === given) return given
  const target = resolve(moved)
  if ((await stat(target).catch(() => undefined))?.isDirectory() !== true) {
    log(`the settings name data dir ${target}, which is not a folder; staying in ${given}`)
    return given
  }
  const settings = await SettingsStore.open(target)
  if (settings.value.dataDir === null) await settings.update({ ...(await SettingsStore.open(given)).value, dataDir: target })
  await copyFile(join(given, 'identity.pem'), join(target, 'identity.pem'), constants.COPYFILE_EXCL).catch(() => {})
  log(`data dir ${target} (named in ${join(given, 'settings.json')})`)
  return target
}
