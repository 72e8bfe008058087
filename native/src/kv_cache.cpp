#include "kv_cache.h"

#include <algorithm>
#include <string>

#include "errors.h"

namespace neuron {

size_t KvCache::block_bytes(int il) const {
    const size_t i = (size_t) (il - il0);
    if (i >= k.size()) return 0;
    size_t n = 0;
    for (ggml_tensor * t : {k[i], v[i], conv[i], ssm[i], idx_k[i]}) n += t ? ggml_nbytes(t) : 0;
    if (i < comp.size()) {
        const Compressed & c = comp[i];
        for (ggml_tensor * t : {c.k, c.kv, c.score, c.idx_k, c.idx_kv, c.idx_score}) n += t ? ggml_nbytes(t) : 0;
    }
    return n;
}

bool KvCache::recurrent() const {
    for (ggml_tensor * t : conv) {
        if (t) return true;
    }
    for (const Compressed & c : comp) {
        if (c.kv) return true;
    }
    return false;
}

void KvCache::clear_recurrent() const {
    for (size_t i = 0; i < conv.size(); ++i) {
        if (conv[i]) ggml_backend_tensor_memset(conv[i], 0, 0, ggml_nbytes(conv[i]));
        if (ssm[i]) ggml_backend_tensor_memset(ssm[i], 0, 0, ggml_nbytes(ssm[i]));
    }
    for (const Compressed & c : comp) {
        for (ggml_tensor * t : {c.kv, c.score, c.idx_kv, c.idx_score}) {
            if (t) ggml_backend_tensor_memset(t, 0, 0, ggml_nbytes(t));
        }
    }
}

KvCache::~KvCache() {
    if (buffer) ggml_backend_buffer_free(buffer);
    if (ctx) ggml_free(ctx);
}

namespace {

// llama_kv_cache_dsv4's compressed caches and compressor states for one block (llama-kv-cache-dsv4.cpp)
KvCache::Compressed make_compressed(const HParams & hp, ggml_context * ctx, int il, int64_t size, ggml_type type) {
    KvCache::Compressed c;
    c.ratio = hp.dsv4.ratio(il);
    if (c.ratio == 0) return c;
    const int64_t D = hp.n_embd_head, I = hp.dsv4.idx_head_size, cells = (size + c.ratio - 1) / c.ratio;
    const bool overlap = c.ratio == 4;
    const int64_t rows = overlap ? 2 * c.ratio : c.ratio;
    c.k = ggml_new_tensor_2d(ctx, type, D, cells);
    c.kv = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, (overlap ? 2 : 1) * D, rows);
    c.score = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, (overlap ? 2 : 1) * D, rows);
    ggml_format_name(c.k, "cache_comp_k_l%d", il);
    ggml_format_name(c.kv, "comp_state_kv_l%d", il);
    ggml_format_name(c.score, "comp_state_score_l%d", il);
    if (overlap) {
        c.idx_k = ggml_new_tensor_2d(ctx, type, I, cells);
        c.idx_kv = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 2 * I, rows);
        c.idx_score = ggml_new_tensor_2d(ctx, GGML_TYPE_F32, 2 * I, rows);
        ggml_format_name(c.idx_k, "cache_idx_k_l%d", il);
        ggml_format_name(c.idx_kv, "idx_state_kv_l%d", il);
        ggml_format_name(c.idx_score, "idx_state_score_l%d", il);
    }
    return c;
}

}  // namespace

std::unique_ptr<KvCache> make_kv_cache(const Model & model, int il0, int il1, int64_t size, ggml_type type,
                                       ggml_backend_buffer_type_t buft) {
    auto kv = std::make_unique<KvCache>();
    kv->size = size;
    kv->il0 = il0;
    const int n_layers = il1 - il0;
    bool any_swa = false;
    for (int il = il0; il < il1; ++il) any_swa = any_swa || model.hp.is_swa(il);
    if (any_swa) kv->swa_size = std::min(size, (model.hp.n_swa + SWA_SLACK + 255) / 256 * 256);
    if (n_layers <= 0) return kv;  // a session without blocks (embed-only / head-only) keeps no cache
    ggml_init_params p = {ggml_tensor_overhead() * (9 * n_layers + 1), nullptr, true};
    kv->ctx = ggml_init(p);
    for (int il = il0; il < il1; ++il) {
        // llama_kv_cache_dsa's second cache: one indexer key per position, full blocks only
        ggml_tensor * idx = nullptr;
        if (model.hp.arch == Arch::GlmDsa && model.hp.is_indexer_full(il)) {
            idx = ggml_new_tensor_2d(kv->ctx, type, model.hp.indexer_head_size, size);
            ggml_format_name(idx, "cache_idx_k_l%d", il);
        }
        kv->idx_k.push_back(idx);
        if (model.hp.is_recurrent(il)) {
            // llama.cpp keeps both states in f32 (llama_memory_recurrent's type_r / type_s), one slot per sequence
            ggml_tensor * r = ggml_new_tensor_2d(kv->ctx, GGML_TYPE_F32, model.hp.n_embd_r(), 1);
            ggml_tensor * s = ggml_new_tensor_2d(kv->ctx, GGML_TYPE_F32, model.hp.n_embd_s(), 1);
            ggml_format_name(r, "cache_r_l%d", il);
            ggml_format_name(s, "cache_s_l%d", il);
            kv->k.push_back(nullptr);
            kv->v.push_back(nullptr);
            kv->conv.push_back(r);
            kv->ssm.push_back(s);
            continue;
        }
        kv->conv.push_back(nullptr);
        kv->ssm.push_back(nullptr);
        const int64_t cells = model.hp.is_swa(il) ? kv->swa_size : size;
        ggml_tensor * k = ggml_new_tensor_2d(kv->ctx, type, model.hp.cache_k_values(), cells);
        ggml_format_name(k, "cache_k_l%d", il);
        kv->k.push_back(k);
        // MLA's latent cache is key-only: V is read from the keys
        ggml_tensor * v = nullptr;
        if (model.hp.cache_v_values() > 0) {
            v = ggml_new_tensor_2d(kv->ctx, type, model.hp.cache_v_values(), cells);
            ggml_format_name(v, "cache_v_l%d", il);
        }
        kv->v.push_back(v);
        if (model.hp.is_dsv4()) kv->comp.push_back(make_compressed(model.hp, kv->ctx, il, size, type));
    }
    kv->buffer = ggml_backend_alloc_ctx_tensors_from_buft(kv->ctx, buft);
    if (!kv->buffer) {
        throw RuntimeError("OUT_OF_MEMORY", "cannot allocate the KV cache for " + std::to_string(size) + " tokens")
            .num("maxTokens", (double) size);
    }
    ggml_backend_buffer_set_usage(kv->buffer, GGML_BACKEND_BUFFER_USAGE_ANY);
    ggml_backend_buffer_clear(kv->buffer, 0);
    return kv;
}

}  // namespace neuron
