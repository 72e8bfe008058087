import { z } from 'zod'
import { MAX_ALLOWED_KEYS } from './allowed-keys'
import { NodeId, PublicKey } from './identity'
import { rpc } from './rpc'

// The app's settings: where its swarm is, what it may use of this computer, who may join it. Part of the app's
// contract (protocol/app.ts).

/** What the user allows the app to use. null: no limit beyond what the computer has. */
export const Limits = z.object({
  /** Disk the artifacts may take, bytes. */
  diskBytes: z.number().int().positive().nullable(),
  /** Memory the loaded layers may take, bytes. */
  memoryBytes: z.number().int().positive().nullable(),
  /** Threads for the runtime; more than the physical cores makes ggml many times slower. */
  threads: z.number().int().positive().max(256),
  /** Use detected GPUs (CUDA / Vulkan / Metal) when the runtime can. */
  useGpu: z.boolean(),
})
export type Limits = z.infer<typeof Limits>

/**
 * Who sees a chat on the swarm in force. private: the embedded swarm, whose tracker listens on loopback,
 * so every host is on this computer. public: a remote tracker's, where the first host on a route sees
 * the prompt's tokens, the last one the answer's, and every one the hidden states between blocks.
 */
export const SwarmPrivacy = z.object({
  level: z.enum(['private', 'public']),
  /** The user agreed to chat on this tracker knowing that (asked once per tracker URL); always true when private. */
  consented: z.boolean(),
})
export type SwarmPrivacy = z.infer<typeof SwarmPrivacy>

export const Settings = z.object({
  /** null: the embedded default, a private tracker in this process. */
  trackerUrl: z.string().url().nullable(),
  /** The tracker the backend is connected to now (the embedded one's loopback URL when trackerUrl is null). */
  connectedTrackerUrl: z.string().url(),
  /** Keys, artifacts, hardware cache and settings live here. */
  dataDir: z.string().min(1),
  publicKey: PublicKey,
  /** This computer's host id on the swarm (derived from the public key). */
  hostId: NodeId,
  limits: Limits,
  /** The backend can show this computer's file dialog (models.pick): true in Electron, false in a browser. */
  canPickFiles: z.boolean(),
  /**
   * Something to tell the user about the settings themselves (the file was unreadable and kept aside); null: nothing.
   */
  notice: z.string().nullable(),
  privacy: SwarmPrivacy,
  /**
   * The embedded swarm's allow-list: only these keys (and this app's own) may join it; null: anyone who can reach it.
   */
  allowedKeys: z.array(PublicKey).max(MAX_ALLOWED_KEYS).nullable(),
  /** The embedded swarm is open to the home network (listens on every interface, advertised by mDNS, pairing). */
  lanOpen: z.boolean(),
})
export type Settings = z.infer<typeof Settings>

/** A change to settings: every field optional; absent fields keep their value. */
export const SettingsUpdate = z
  .object({
    trackerUrl: z.string().url('the tracker URL must be a full URL such as http://127.0.0.1:7070').nullable(),
    dataDir: z.string().min(1, 'give a folder for the data dir'),
    limits: Limits.partial(),
    allowedKeys: z.array(PublicKey).max(MAX_ALLOWED_KEYS, `a swarm lists at most ${MAX_ALLOWED_KEYS} keys`).nullable(),
    lanOpen: z.boolean(),
    /**
     * What a change of tracker does to hosting on the tracker left: resumeOnReturn (the default) stops it
     * and puts it back as it was when the app switches back; stop forgets it.
     */
    hostingOnSwitch: z.enum(['resumeOnReturn', 'stop']),
  })
  .partial()
  .strict()
export type SettingsUpdate = z.infer<typeof SettingsUpdate>

const Empty = z.object({}).strict()

/** settings.*: what the Settings screen reads and changes. */
export const SettingsMethods = {
  'settings.get': rpc(Empty, Settings),
  /** Checks everything first (a tracker URL must answer); on any error nothing changes. */
  'settings.update': rpc(SettingsUpdate, Settings),
  /**
   * Checks that a Neuron tracker answers at the URL, changing nothing (tracker_unreachable saying why); the screen
   * asks what to do with hosting only about a tracker the app can switch to. Answers the URL as it would be saved.
   */
  'settings.checkTracker': rpc(
    z
      .object({ trackerUrl: z.string().url('the tracker URL must be a full URL such as http://127.0.0.1:7070') })
      .strict(),
    z.object({ trackerUrl: z.string().url() }),
  ),
  /** Records that the user agreed to chat on the tracker in force, a public one (see SwarmPrivacy). */
  'settings.consent': rpc(z.object({ trackerUrl: z.string().url() }).strict(), Settings),
} as const
