#pragma once
// One session's K/V cache for the blocks it runs (its sub-range of the runtime's). Cell i holds position i.
// A delta-net block (qwen35moe) keeps a fixed-size recurrent state instead: its last conv inputs and its SSM state.
#include <cstdint>
#include <memory>
#include <vector>

#include "ggml-backend.h"
#include "model.h"

namespace neuron {

// A sliding-window block keeps a ring of window + SWA_SLACK cells (rounded up to 256, as llama.cpp pads):
// a forward pass takes at most SWA_SLACK new positions, and may roll back at most that far.
constexpr int64_t SWA_SLACK = 512;

struct KvCache {
    int64_t size = 0;                // cells (= the session's maxTokens)
    int64_t swa_size = 0;            // cells of each sliding-window block: position p sits in cell p % swa_size
    int il0 = 0;                     // first block cached: k[il - il0], v[il - il0]
    std::vector<ggml_tensor *> k;    // per layer: [n_embd_kv, size] (MLA: [kv_lora + rope, size])
    std::vector<ggml_tensor *> v;    // per layer: [n_embd_kv, size], not transposed; nullptr for MLA
    // per layer, delta-net only (else nullptr, and k / v are): f32 [(d_conv - 1) * channels]
    std::vector<ggml_tensor *> conv;
    std::vector<ggml_tensor *> ssm;  // per layer, delta-net only: f32 [d_state * d_state * value heads]
    std::vector<ggml_tensor *> idx_k;  // per layer, glm-dsa's full-indexer blocks only: [indexer_head_size, size] keys
    // deepseek4, per layer of ratio 4 or 128 (else all null): one compressed key per `ratio` positions (f16
    // [head, ceil(size / ratio)]), at ratio 4 the indexer's keys too, and each compressor's f32 state: the
    // kv and score rows of the last 2 x 4 (overlapping windows) or 128 positions, row = position % rows
    struct Compressed {
        int64_t ratio = 0;
        ggml_tensor * k = nullptr;
        ggml_tensor * kv = nullptr;
        ggml_tensor * score = nullptr;
        ggml_tensor * idx_k = nullptr;
        ggml_tensor * idx_kv = nullptr;
        ggml_tensor * idx_score = nullptr;
    };
    std::vector<Compressed> comp;
    ggml_context * ctx = nullptr;
    ggml_backend_buffer_t buffer = nullptr;

    KvCache() = default;
    KvCache(const KvCache &) = delete;
    KvCache & operator=(const KvCache &) = delete;
    ~KvCache();

    size_t bytes() const { return buffer ? ggml_backend_buffer_get_size(buffer) : 0; }
    // the sliding-window blocks reuse cells: positions a forward may add, and how far back it may start
    bool ring() const { return swa_size > 0 && swa_size < size; }
    size_t block_bytes(int il) const;  // the cache of block il (K and V, or its recurrent state)
    // recurrent (or compressor) state cannot be rolled back: only
    // a replay from position 0 (which clears it) may go back
    bool recurrent() const;
    void clear_recurrent() const;
};

// blocks [il0, il1) only (a session's sub-range of the runtime's range)
std::unique_ptr<KvCache> make_kv_cache(const Model & model, int il0, int il1, int64_t size, ggml_type type,
                                       ggml_backend_buffer_type_t buft);

}  // namespace neuron
