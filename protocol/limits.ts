// How much a peer may send: every string and array in a message has an upper bound, so what a
// message costs to parse and keep is known before any of it is used. Generous on purpose: an honest
// peer never comes near them; they only stop a message built to exhaust a process.

/** A name or label: a cpu or gpu model, a vendor, an architecture, a tensor name, an error code. */
export const MAX_LABEL_CHARS = 256
/** A model id (it names directories and torrents). */
export const MAX_MODEL_ID_CHARS = 128
/** A filesystem path (Linux PATH_MAX). */
export const MAX_PATH_CHARS = 4096
/** A URL: an endpoint a host advertises. */
export const MAX_URL_CHARS = 2048
/** A sentence a person reads: an error message, a refusal's reason. */
export const MAX_MESSAGE_CHARS = 8192
/** A challenge nonce: the tracker issues 32 characters. */
export const MAX_NONCE_CHARS = 128
/** CPU feature flags: an x86 CPU lists about 150 today. */
export const MAX_CPU_FLAGS = 1024
/** GPUs in one computer. */
export const MAX_GPUS = 64
/** Blocks (layers) of one model: the largest GGUF models have about 130. */
export const MAX_BLOCKS = 4096
/** Artifact files of one model: at most one per block, plus embed and head. */
export const MAX_ARTIFACTS = MAX_BLOCKS + 2
/** Tensors in one artifact: about 20 per block, a few hundred per block for mixture-of-experts models. */
export const MAX_TENSORS_PER_ARTIFACT = 1 << 18
/** Host ids one request names (hosts to avoid, dashboards to follow). */
export const MAX_HOST_IDS = 1024
/** Entries in one listing the tracker answers with (models, hosts). */
export const MAX_LISTED = 100_000
/** Positions one session may ask for: 1 Mi tokens, past any model's context today (a host checks its own capacity). */
export const MAX_SESSION_TOKENS = 1 << 20
/** Session ids one heartbeat lists (open since the last one): past it, the host lists none and is counted as before. */
export const MAX_HEARTBEAT_SESSIONS = 1024
/** Receipts handed in at once: one per hop of one step, with room for a batch. */
export const MAX_RECEIPTS = 4096
/** A model's torrent file: 20 bytes of hash per piece, so 16 MiB is 800 000 pieces. */
export const MAX_TORRENT_BYTES = 16 * 1024 * 1024
/** A model's metadata-only tokenizer GGUF: a 256k vocabulary with its merges is under 10 MiB. */
export const MAX_TOKENIZER_BYTES = 32 * 1024 * 1024
/** A round trip a client reports, ms: a minute is past any working link; longer is clamped to it. */
export const MAX_ROUND_TRIP_MS = 60_000
/** Hosts one latency report names: the hops of a route and the hosts the tracker asked to be measured. */
export const MAX_LATENCY_LINKS = 64
/** Round trips per host in one report. */
export const MAX_ROUND_TRIPS_PER_LINK = 16
/** Hosts a route asks its client to measure besides its hops. */
export const MAX_MEASURE_TARGETS = 8

/** Most values, or int32 side values, per token one seam may carry (manifests, probe sets, audits). */
export const MAX_SEAM_VALUES = 1 << 24
