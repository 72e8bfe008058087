#pragma once
// A loaded layer range plus its compute scheduler, and the sessions computing on it.
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "errors.h"
#include "ggml-backend.h"
#include "graph.h"
#include "kv_cache.h"
#include "model.h"

namespace neuron {

struct RuntimeOptions {
    LoadOptions load;
    std::string device = "auto";
    int threads = 1;
    bool flash_attn = true;
};

struct RuntimeCore {
    std::unique_ptr<Model> model;
    ggml_backend_dev_t dev = nullptr;
    ggml_backend_t backend = nullptr;  // the chosen device
    ggml_backend_t cpu = nullptr;      // CPU fallback (== backend on CPU)
    ggml_backend_sched_t sched = nullptr;
    size_t graph_size = 0;        // nodes of one session's graph
    size_t batch_graph_size = 0;  // nodes of a batch of up to MAX_BATCH_SEQS sessions' graph (the scheduler's size)
    int threads = 1;
    bool flash_attn = true;
    void * threadpool = nullptr;  // the CPU backend's kept threads (attach_cpu_threadpool), or null
    std::atomic<bool> disposed{false};
    // One graph at a time per runtime: the scheduler and its compute buffers are shared.
    // Workers only read the model; only dispose() (JS thread) changes it, under this lock.
    std::mutex mu;

    int in_flight = 0;  // forward passes queued or running (JS thread only)

    static std::shared_ptr<RuntimeCore> load(const RuntimeOptions & opts);
    // JS thread: frees the weights now, or when the last forward pass in flight settles,
    // so a long prefill elsewhere never blocks the event loop
    void dispose();
    void release();
    ~RuntimeCore();
};

struct SessionState {
    std::shared_ptr<RuntimeCore> core;
    std::unique_ptr<KvCache> kv;
    int64_t max_tokens = 0;
    int64_t n_past = 0;
    // positions written since the last forward from position 0: a sliding-window ring may hold any of
    // them, so how far back a session may start is measured from here, not from n_past
    int64_t ring_written = 0;
    // the blocks this session runs: a sub-range [il0, il1) of the runtime's range (the route may
    // use only part of a host's blocks); embeds / has the head only when it starts at block 0 /
    // ends at the last block and the runtime holds those weights
    int il0 = 0;
    int il1 = 0;
    bool embed = false;
    bool head = false;
    std::atomic<bool> closed{false};
    std::atomic<bool> busy{false};  // a forward pass is queued or running (set and cleared on the JS thread)
};

// blocks: [from, to) with il0 <= from < to <= il1 of the runtime (BAD_RANGE otherwise); nullptr = the whole range
std::shared_ptr<SessionState> open_session(const std::shared_ptr<RuntimeCore> & core, int64_t max_tokens,
                                           const std::pair<int64_t, int64_t> * blocks = nullptr);

struct ForwardRequest {
    InputKind kind = InputKind::Tokens;
    std::vector<int32_t> tokens;
    std::vector<float> hidden;  // f32 (f16 input is widened on the JS thread)
    std::vector<int32_t> token_ids;  // with hidden states, when a block of the range needs them (seams.h)
    std::vector<int32_t> indices;    // n_tokens x indices_in: glm-dsa's top-k from the previous hop
    int64_t n_tokens = 0;
    int64_t start = 0;
    bool all_outputs = false;
    bool f16_output = false;  // hidden states for the wire: converted on the worker thread
};

struct ForwardResult {
    std::vector<float> data;
    std::vector<ggml_fp16_t> half;  // instead of data when f16_output
    std::vector<int32_t> indices;   // n_tokens x indices_out, with hidden states (seams.h)
    int64_t rows = 0;
    int64_t cols = 0;
};

// Throws SWA_ROLLBACK or RECURRENT_ROLLBACK when the session's
// cache cannot go back to `to` (a forward's start, or a truncate).
void check_rollback(const SessionState & s, int64_t to, bool truncating);
// the session runs hash-routed blocks on hidden states: each forward needs the rows' token ids (seam_inputs.cpp)
bool session_needs_token_ids(const SessionState & s);
// exactly n_tokens ids in the vocabulary when it does, none otherwise
// (throws TOKEN_IDS_SIZE / TOKEN_IDS_UNEXPECTED / TOKEN_OUT_OF_RANGE)
void validate_token_ids(const SessionState & s, const ForwardRequest & req);
// Checks everything about a request that can be checked before compute (throws RuntimeError).
void validate_forward(const SessionState & s, const ForwardRequest & req);
ForwardResult forward(SessionState & s, const ForwardRequest & req);

// Batched forward (runtime_batch.cpp): several sessions of one
// runtime in one graph, as llama-server's continuous batching.
constexpr size_t MAX_BATCH_SEQS = 16;
struct BatchItem {
    SessionState * session = nullptr;
    ForwardRequest req;
    ForwardResult out;
    std::unique_ptr<RuntimeError> error;  // this item's failure only; the others still ran
};
// Why the session cannot join a batched graph (its family keeps a sliding window, a recurrent or compressor state, an
// indexer), or nullptr when it can.
const char * batch_refusal(const SessionState & s);
// Runs the items in one graph: each item is checked alone (a bad one gets its error and is left out), the rest must
// share blocks, embedding, head and input kind and be batchable
// (else every item fails with BATCH_MISMATCH / BATCH_UNSUPPORTED).
void forward_batch(RuntimeCore & core, std::vector<BatchItem> & items);

}  // namespace neuron
