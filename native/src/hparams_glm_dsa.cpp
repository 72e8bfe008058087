// glm-dsa (GLM-5.x): llama_model_glm_dsa::load_arch_hparams's lightning-indexer keys, and which blocks are "full"
// (run their own indexer) or "shared" (reuse the top-k of the last full block before them).
#include "errors.h"
#include "hparams.h"

namespace neuron {

namespace {

constexpr int64_t MAX_INDEXER_HEADS = 1 << 12;
constexpr int64_t MAX_INDEXER_HEAD = 1 << 14;
constexpr int64_t MAX_TOP_K = 1 << 20;

[[noreturn]] void bad(const std::string & key, const std::string & why, int64_t v) {
    throw RuntimeError("BAD_METADATA", "glm-dsa." + key + " is " + std::to_string(v) + ": " + why)
        .str("key", "glm-dsa." + key)
        .num("value", (double) v);
}

}  // namespace

void read_glm_dsa(const gguf_context * g, const std::string & a, const std::string & path, HParams & hp) {
    // block_count includes the MTP (next-token prediction) blocks, which the main pass never runs
    const int64_t nextn = get_int(g, a + "nextn_predict_layers").value_or(0);
    if (nextn < 0 || nextn >= hp.n_layer)
        bad("nextn_predict_layers", "it leaves no blocks of " + std::to_string(hp.n_layer), nextn);
    hp.n_layer -= nextn;

    hp.indexer_n_head = require_int(g, a + "attention.indexer.head_count", path);
    hp.indexer_head_size = require_int(g, a + "attention.indexer.key_length", path);
    hp.indexer_top_k = require_int(g, a + "attention.indexer.top_k", path);
    if (hp.indexer_n_head <= 0 || hp.indexer_n_head > MAX_INDEXER_HEADS)
        bad("attention.indexer.head_count", "no indexer has that many heads", hp.indexer_n_head);
    // llama.cpp rotates indexer queries and keys by one Hadamard matrix as wide as the head: a power of two from 64
    const int64_t d = hp.indexer_head_size;
    if (d < 64 || d > MAX_INDEXER_HEAD || (d & (d - 1)) != 0)
        bad("attention.indexer.key_length", "it must be a power of two from 64", d);
    if (hp.n_rot > d)
        bad("attention.indexer.key_length",
            "the indexer ropes rope.dimension_count " + std::to_string(hp.n_rot) + " values of it", d);
    if (hp.indexer_top_k <= 0 || hp.indexer_top_k > MAX_TOP_K)
        bad("attention.indexer.top_k", "it must be 1 to " + std::to_string(MAX_TOP_K), hp.indexer_top_k);

    // without the key: every block is full below a 1M context (GLM-5,
    // 5.1), else GLM-5.2's pattern (blocks 0, 1, then every 4th)
    hp.indexer_full.assign((size_t) hp.n_layer, true);
    if (hp.n_ctx_train >= 1048576) {
        for (int64_t il = 0; il < hp.n_layer; ++il) hp.indexer_full[il] = il < 78 && (il < 2 || (il - 2) % 4 == 0);
    }
    const std::string key = a + "attention.indexer.types";
    const int64_t id = gguf_find_key(g, key.c_str());
    if (id >= 0 && gguf_get_kv_type(g, id) == GGUF_TYPE_ARRAY) {
        const auto t = gguf_get_arr_type(g, id);
        if ((t != GGUF_TYPE_BOOL && t != GGUF_TYPE_INT32 && t != GGUF_TYPE_UINT32) ||
            (int64_t) gguf_get_arr_n(g, id) != hp.n_layer) {
            throw RuntimeError("BAD_METADATA", "metadata " + key + " must hold one integer per block (" +
                                                   std::to_string(hp.n_layer) + ")")
                .str("key", key);
        }
        for (int64_t il = 0; il < hp.n_layer; ++il) {
            hp.indexer_full[il] = t == GGUF_TYPE_BOOL ? ((const int8_t *) gguf_get_arr_data(g, id))[il] != 0
                                                      : ((const int32_t *) gguf_get_arr_data(g, id))[il] != 0;
        }
    } else if (id >= 0) {
        hp.indexer_full.assign((size_t) hp.n_layer, get_int(g, key).value_or(1) != 0);  // one value for every block
    }
    // llama.cpp asserts that a shared block follows a full one: its graph would have no top-k to reuse
    if (!hp.indexer_full[0])
        bad("attention.indexer.types",
            "block 0 must run its own indexer (a shared block reuses an earlier one's top-k)", 0);
}

}  // namespace neuron
