// llama_model_qwen35moe::load_arch_hparams: delta-net sizes, M-RoPE sections, which blocks are recurrent.
// block_count includes the MTP (next-token prediction) blocks, which the main pass never runs: they are dropped.
#include "errors.h"
#include "hparams_parts.h"

namespace neuron {

void read_qwen35(const gguf_context * g, const std::string & a, const std::string & path, HParams & hp) {
    hp.ssm_d_conv = require_int(g, a + "ssm.conv_kernel", path);
    hp.ssm_d_inner = require_int(g, a + "ssm.inner_size", path);
    hp.ssm_d_state = require_int(g, a + "ssm.state_size", path);
    hp.ssm_dt_rank = require_int(g, a + "ssm.time_step_rank", path);
    hp.ssm_n_group = require_int(g, a + "ssm.group_count", path);
    hp.n_ff_shexp = get_int(g, a + "expert_shared_feed_forward_length").value_or(0);
    if (hp.n_ff_shexp == 0) hp.n_ff_shexp = hp.n_ff;

    const std::string sections = a + "rope.dimension_sections";
    const int64_t sid = gguf_find_key(g, sections.c_str());
    const bool int_array =
        sid >= 0 && gguf_get_kv_type(g, sid) == GGUF_TYPE_ARRAY &&
        (gguf_get_arr_type(g, sid) == GGUF_TYPE_INT32 || gguf_get_arr_type(g, sid) == GGUF_TYPE_UINT32);
    if (!int_array || gguf_get_arr_n(g, sid) != 4) {
        throw RuntimeError("BAD_METADATA", "artifact " + path + " needs " + sections + " as 4 integers")
            .str("key", sections)
            .str("file", path);
    }
    for (int i = 0; i < 4; ++i) hp.rope_sections[i] = ((const int32_t *) gguf_get_arr_data(g, sid))[i];

    const int64_t n_all = hp.n_layer;
    const int64_t nextn = get_int(g, a + "nextn_predict_layers").value_or(0);
    if (nextn < 0 || nextn >= n_all) {
        throw RuntimeError("BAD_METADATA", "nextn_predict_layers " + std::to_string(nextn) + " leaves no blocks of " +
                                               std::to_string(n_all))
            .str("key", a + "nextn_predict_layers");
    }
    hp.n_layer = n_all - nextn;
    hp.recurrent_layers.assign((size_t) hp.n_layer, false);
    const std::string key = a + "attention.recurrent_layers";
    const int64_t id = gguf_find_key(g, key.c_str());
    if (id >= 0) {
        const auto t = gguf_get_kv_type(g, id) == GGUF_TYPE_ARRAY ? gguf_get_arr_type(g, id) : GGUF_TYPE_COUNT;
        if ((t != GGUF_TYPE_BOOL && t != GGUF_TYPE_INT32 && t != GGUF_TYPE_UINT32) ||
            (int64_t) gguf_get_arr_n(g, id) != n_all) {
            throw RuntimeError("BAD_METADATA", "metadata " + key + " must hold one entry per block").str("key", key);
        }
        for (int64_t il = 0; il < hp.n_layer; ++il) {
            hp.recurrent_layers[il] = t == GGUF_TYPE_BOOL ? ((const int8_t *) gguf_get_arr_data(g, id))[il] != 0
                                                          : ((const int32_t *) gguf_get_arr_data(g, id))[il] != 0;
        }
        return;
    }
    const int64_t interval = get_int(g, a + "full_attention_interval").value_or(4);
    if (interval <= 0 || interval > MAX_BLOCKS) {
        throw RuntimeError("BAD_METADATA", "full_attention_interval " + std::to_string(interval) + " must be positive")
            .str("key", a + "full_attention_interval");
    }
    for (int64_t il = 0; il < hp.n_layer; ++il) hp.recurrent_layers[il] = (il + 1) % interval != 0;
}

}  // namespace neuron
