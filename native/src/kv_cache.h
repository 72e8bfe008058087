#pragma once
// One session's K/V cache for the layers of its runtime. Cell i holds position i.
#include <cstdint>
#include <memory>
#include <vector>

#include "ggml-backend.h"
#include "model.h"

namespace neuron {

struct KvCache {
    int64_t size = 0;                // cells (= the session's maxTokens)
    std::vector<ggml_tensor *> k;    // per layer: [n_embd_kv, size]
    std::vector<ggml_tensor *> v;    // per layer: [n_embd_kv, size], not transposed
    ggml_context * ctx = nullptr;
    ggml_backend_buffer_t buffer = nullptr;

    KvCache() = default;
    KvCache(const KvCache &) = delete;
    KvCache & operator=(const KvCache &) = delete;
    ~KvCache();

    size_t bytes() const { return buffer ? ggml_backend_buffer_get_size(buffer) : 0; }
};

std::unique_ptr<KvCache> make_kv_cache(const Model & model, int64_t size, ggml_type type, ggml_backend_buffer_type_t buft);

}  // namespace neuron
