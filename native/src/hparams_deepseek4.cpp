// DeepSeek-V4's hyper-parameters: llama_model_deepseek4::load_arch_hparams, with its asserts as typed errors.
#include "hparams_deepseek4.h"

#include <string>

#include "errors.h"

namespace neuron {

namespace {

constexpr int64_t MAX_DIM = 1 << 20;

int64_t required(const gguf_context * g, const std::string & key, const std::string & path) {
    if (auto v = get_int(g, key)) return *v;
    throw RuntimeError("BAD_METADATA", "artifact " + path + " lacks metadata key " + key)
        .str("key", key)
        .str("file", path);
}

// a per-block array (one value per block, at least n entries) or one value for every block
template <typename T>
std::vector<T> per_block(const gguf_context * g, const std::string & key, int64_t n, const std::string & path,
                         std::optional<T> fallback) {
    const int64_t id = gguf_find_key(g, key.c_str());
    if (id < 0) {
        if (fallback) return std::vector<T>((size_t) n, *fallback);
        throw RuntimeError("BAD_METADATA", "artifact " + path + " lacks metadata key " + key)
            .str("key", key)
            .str("file", path);
    }
    if (gguf_get_kv_type(g, id) != GGUF_TYPE_ARRAY) {
        if constexpr (std::is_same_v<T, float>) return std::vector<T>((size_t) n, *get_float(g, key));
        else return std::vector<T>((size_t) n, *get_int(g, key));
    }
    const auto t = gguf_get_arr_type(g, id);
    if ((int64_t) gguf_get_arr_n(g, id) < n) {
        throw RuntimeError("BAD_METADATA", "metadata " + key + " holds " + std::to_string(gguf_get_arr_n(g, id)) +
                                               " entries, fewer than the " + std::to_string(n) + " blocks")
            .str("key", key);
    }
    std::vector<T> out((size_t) n);
    for (int64_t i = 0; i < n; ++i) {
        if (t == GGUF_TYPE_FLOAT32) out[i] = (T) ((const float *) gguf_get_arr_data(g, id))[i];
        else if (t == GGUF_TYPE_INT32 || t == GGUF_TYPE_UINT32)
            out[i] = (T) ((const int32_t *) gguf_get_arr_data(g, id))[i];
        else throw RuntimeError("BAD_METADATA", "metadata " + key + " is not an array of numbers").str("key", key);
    }
    return out;
}

}  // namespace

void read_deepseek4(const gguf_context * g, const std::string & a, const std::string & path, HParams & hp) {
    auto & d = hp.dsv4;
    const int64_t n_all = hp.n_layer;
    const int64_t nextn = get_int(g, a + "nextn_predict_layers").value_or(0);
    if (nextn < 0 || nextn >= n_all) {
        throw RuntimeError("BAD_METADATA", "nextn_predict_layers " + std::to_string(nextn) + " leaves no blocks of " +
                                               std::to_string(n_all))
            .str("key", a + "nextn_predict_layers");
    }
    // the MTP blocks after the trunk are never run by the main pass
    hp.n_layer = n_all - nextn;
    hp.n_lora_q = required(g, a + "attention.q_lora_rank", path);
    hp.n_swa = required(g, a + "attention.sliding_window", path);
    hp.swa_layers.assign((size_t) hp.n_layer, true);
    hp.freq_base_swa = hp.freq_base;
    hp.n_head_kv = 1;  // one key (= value) head, cached key-only
    d.idx_heads = required(g, a + "attention.indexer.head_count", path);
    d.idx_head_size = required(g, a + "attention.indexer.key_length", path);
    d.idx_top_k = required(g, a + "attention.indexer.top_k", path);
    d.o_groups = required(g, a + "attention.output_group_count", path);
    d.o_lora_rank = required(g, a + "attention.output_lora_rank", path);
    d.compress_rope_base = get_float(g, a + "attention.compress_rope_freq_base").value_or(0.0f);
    d.hc = required(g, a + "hyper_connection.count", path);
    d.sinkhorn_iters = required(g, a + "hyper_connection.sinkhorn_iterations", path);
    d.hc_eps = get_float(g, a + "hyper_connection.epsilon").value_or(0.0f);
    d.hash_layers = required(g, a + "hash_layer_count", path);
    d.ratios = per_block<int64_t>(g, a + "attention.compress_ratios", n_all, path, std::nullopt);
    d.clamp_exp = per_block<float>(g, a + "swiglu_clamp_exp", n_all, path, std::nullopt);
    d.clamp_shexp = per_block<float>(g, a + "swiglu_clamp_shexp", n_all, path, std::nullopt);
    if (gguf_find_key(g, (a + "swiglu_clamp_shexp").c_str()) < 0) d.clamp_shexp = d.clamp_exp;
    hp.n_expert_shared = get_int(g, a + "expert_shared_count").value_or(0);
    hp.expert_weights_scale = get_float(g, a + "expert_weights_scale").value_or(0.0f);
    hp.expert_weights_norm = get_int(g, a + "expert_weights_norm").value_or(0) != 0;
    const int64_t gating = get_int(g, a + "expert_gating_func").value_or(0);
    // llama.cpp's loader refuses any other scoring
    if (gating != (int64_t) Gating::SqrtSoftplus) {
        throw RuntimeError("UNSUPPORTED_MODEL",
                           "deepseek4 expects expert_gating_func 4 (sqrt-softplus), not " + std::to_string(gating))
            .num("value", (double) gating);
    }
    hp.gating = Gating::SqrtSoftplus;
}

void check_deepseek4(const HParams & hp) {
    const auto & d = hp.dsv4;
    auto bad = [&](const std::string & what, int64_t v) {
        throw RuntimeError("BAD_METADATA", what + " is " + std::to_string(v) + ", which no deepseek4 model can have")
            .str("key", what)
            .num("value", (double) v);
    };
    // build_hc_pre asserts exactly 4 streams
    if (d.hc != 4) bad("hyper_connection.count (llama.cpp supports 4)", d.hc);
    if (d.sinkhorn_iters < 1 || d.sinkhorn_iters > 1000) bad("hyper_connection.sinkhorn_iterations", d.sinkhorn_iters);
    if (d.hash_layers < 0 || d.hash_layers > hp.n_layer) bad("hash_layer_count", d.hash_layers);
    for (int64_t r : d.ratios) {
        if (r != 0 && r != 4 && r != 128) bad("attention.compress_ratios (only 0, 4 and 128)", r);
    }
    const std::pair<const char *, int64_t> positive[] = {
        {"attention.q_lora_rank", hp.n_lora_q},          {"attention.sliding_window", hp.n_swa},
        {"attention.indexer.head_count", d.idx_heads},   {"attention.indexer.key_length", d.idx_head_size},
        {"attention.indexer.top_k", d.idx_top_k},        {"attention.output_group_count", d.o_groups},
        {"attention.output_lora_rank", d.o_lora_rank},   {"expert_count", hp.n_expert},
        {"expert_shared_count", hp.n_expert_shared}};
    for (const auto & [what, v] : positive) {
        if (v <= 0 || v > MAX_DIM) bad(what, v);
    }
    if (hp.n_head % d.o_groups != 0) bad("attention.output_group_count (not a divisor of head_count)", d.o_groups);
    if (hp.n_rot > hp.n_embd_head) bad("rope.dimension_count (above key_length)", hp.n_rot);
    if (hp.n_rot > d.idx_head_size) bad("rope.dimension_count (above the indexer's key_length)", hp.n_rot);
}

}  // namespace neuron
