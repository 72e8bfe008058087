import { constants } from 'node:fs'
import { access, copyFile, cp, mkdir, stat } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { NeuronError } from '../../protocol'
import { CONVERSATIONS_DIR } from './controllers/conversations'
import { SettingsStore } from './settings-store'

/** Refuses a data dir that is missing, a file, or not writable by this user, saying which. */
export async function checkWritableDir(dir: string): Promise<void> {
  const info = await stat(dir).catch(() => undefined)
  if (info === undefined)
    throw new NeuronError('bad_request', `the data dir ${dir} does not exist; create the folder first, or pick another`)
  if (!info.isDirectory())
    throw new NeuronError('bad_request', `the data dir ${dir} is a file, not a folder; pick a folder`)
  try {
    await access(dir, constants.W_OK)
  } catch {
    throw new NeuronError('bad_request', `the data dir ${dir} is not writable by this user; pick a folder you own`)
  }
}

/**
 * The data dir this run uses, with its settings: the given one, unless its settings name another (a
 * change made in the app applies at the next start); the identity and conversations come along the first time.
 */
export async function resolveDataDir(
  given: string,
  log: (line: string) => void,
): Promise<{ dataDir: string; store: SettingsStore }> {
  await mkdir(given, { recursive: true })
  const here = await SettingsStore.open(given)
  const moved = here.value.dataDir
  if (moved === null || resolve(moved) === given) return { dataDir: given, store: here }
  const target = resolve(moved)
  if ((await stat(target).catch(() => undefined))?.isDirectory() !== true) {
    log(`the settings name data dir ${target}, which is not a folder; staying in ${given}`)
    return { dataDir: given, store: here }
  }
  const store = await SettingsStore.open(target)
  if (store.value.dataDir === null) await store.update({ ...here.value, dataDir: target })
  await copyFile(join(given, 'identity.pem'), join(target, 'identity.pem'), constants.COPYFILE_EXCL).catch(() => {})
  await cp(join(given, CONVERSATIONS_DIR), join(target, CONVERSATIONS_DIR), { recursive: true, force: false }).catch(
    () => {},
  )
  log(`data dir ${target} (named in ${join(given, 'settings.json')})`)
  return { dataDir: target, store }
}
