#include "hparams.h"

#include <cmath>
#include <vector>

#include "errors.h"
#include "hparams_deepseek4.h"

namespace neuron {

std::optional<int64_t> get_int(const gguf_context * g, const std::string & key) {
    const int64_t id = gguf_find_key(g, key.c_str());
    if (id < 0) return std::nullopt;
    switch (gguf_get_kv_type(g, id)) {
        case GGUF_TYPE_BOOL: return gguf_get_val_bool(g, id) ? 1 : 0;
        case GGUF_TYPE_UINT8: return gguf_get_val_u8(g, id);
        case GGUF_TYPE_INT8: return gguf_get_val_i8(g, id);
        case GGUF_TYPE_UINT16: return gguf_get_val_u16(g, id);
        case GGUF_TYPE_INT16: return gguf_get_val_i16(g, id);
        case GGUF_TYPE_UINT32: return gguf_get_val_u32(g, id);
        case GGUF_TYPE_INT32: return gguf_get_val_i32(g, id);
        case GGUF_TYPE_UINT64: return (int64_t) gguf_get_val_u64(g, id);
        case GGUF_TYPE_INT64: return gguf_get_val_i64(g, id);
        case GGUF_TYPE_ARRAY: {
            // per-layer arrays (e.g. head_count_kv): only uniform ones are supported
            const size_t n = gguf_get_arr_n(g, id);
            const auto t = gguf_get_arr_type(g, id);
            if (n == 0 || (t != GGUF_TYPE_UINT32 && t != GGUF_TYPE_INT32)) break;
            const auto * data = (const int32_t *) gguf_get_arr_data(g, id);
            for (size_t i = 1; i < n; ++i) {
                if (data[i] != data[0]) {
                    throw RuntimeError("UNSUPPORTED_MODEL", "metadata " + key + " varies per layer; not supported");
                }
            }
            return data[0];
        }
        default: break;
    }
    throw RuntimeError("BAD_METADATA", "metadata " + key + " is not an integer").str("key", key);
}

std::optional<float> get_float(const gguf_context * g, const std::string & key) {
    const int64_t id = gguf_find_key(g, key.c_str());
    if (id < 0) return std::nullopt;
    switch (gguf_get_kv_type(g, id)) {
        case GGUF_TYPE_FLOAT32: return gguf_get_val_f32(g, id);
        case GGUF_TYPE_FLOAT64: return (float) gguf_get_val_f64(g, id);
        default: break;
    }
    if (auto v = get_int(g, key)) return (float) *v;
    return std::nullopt;
}

std::optional<std::string> get_str(const gguf_context * g, const std::string & key) {
    const int64_t id = gguf_find_key(g, key.c_str());
    if (id < 0 || gguf_get_kv_type(g, id) != GGUF_TYPE_STRING) return std::nullopt;
    return std::string(gguf_get_val_str(g, id));
}

int64_t require_int(const gguf_context * g, const std::string & key, const std::string & path) {
    if (auto v = get_int(g, key)) return *v;
    throw RuntimeError("BAD_METADATA", "artifact " + path + " lacks metadata key " + key)
        .str("key", key)
        .str("file", path);
}

namespace {

constexpr int64_t MAX_DIM = 1 << 20;  // any width, head count or rank
constexpr int64_t MAX_BLOCKS = 4096;

struct ArchInfo {
    const char * name;
    Arch arch;
    int rope_type;  // llama_model_rope_type: NORM (0) or NEOX
};

const ArchInfo ARCHS[] = {
    {"llama", Arch::Llama, 0},
    {"qwen2", Arch::Qwen2, GGML_ROPE_TYPE_NEOX},
    {"qwen3", Arch::Qwen3, GGML_ROPE_TYPE_NEOX},
    {"qwen3moe", Arch::Qwen3Moe, GGML_ROPE_TYPE_NEOX},
    {"deepseek2", Arch::DeepSeek2, 0},
    {"gpt-oss", Arch::GptOss, GGML_ROPE_TYPE_NEOX},
    {"qwen35moe", Arch::Qwen35Moe, GGML_ROPE_TYPE_IMROPE},
    {"glm-dsa", Arch::GlmDsa, 0},
    {"deepseek4", Arch::DeepSeek4, 0},
};

[[noreturn]] void unsupported(const std::string & what) {
    throw RuntimeError("UNSUPPORTED_MODEL", what + " is not supported");
}

// which blocks use the sliding window: a per-block array, or llama_hparams::set_swa_pattern(period)
void read_swa_layers(const gguf_context * g, const std::string & key, HParams & hp) {
    hp.swa_layers.assign((size_t) hp.n_layer, false);
    const int64_t id = gguf_find_key(g, key.c_str());
    if (id >= 0 && gguf_get_kv_type(g, id) == GGUF_TYPE_ARRAY) {
        const auto t = gguf_get_arr_type(g, id);
        if ((int64_t) gguf_get_arr_n(g, id) != hp.n_layer ||
            (t != GGUF_TYPE_BOOL && t != GGUF_TYPE_INT32 && t != GGUF_TYPE_UINT32)) {
            throw RuntimeError("BAD_METADATA", "metadata " + key + " must hold one entry per block").str("key", key);
        }
        for (int64_t il = 0; il < hp.n_layer; ++il) {
            hp.swa_layers[il] = t == GGUF_TYPE_BOOL ? ((const int8_t *) gguf_get_arr_data(g, id))[il] != 0
                                                    : ((const int32_t *) gguf_get_arr_data(g, id))[il] != 0;
        }
        return;
    }
    const int64_t period = get_int(g, key).value_or(2);
    for (int64_t il = 0; il < hp.n_layer; ++il) hp.swa_layers[il] = period == 0 || il % period < period - 1;
}

void read_experts(const gguf_context * g, const std::string & a, HParams & hp) {
    hp.n_expert = get_int(g, a + "expert_count").value_or(0);
    hp.n_expert_used = get_int(g, a + "expert_used_count").value_or(0);
    hp.n_expert_groups = get_int(g, a + "expert_group_count").value_or(0);
    hp.n_group_used = get_int(g, a + "expert_group_used_count").value_or(0);
    if (hp.n_expert == 0) {
        if (hp.arch == Arch::Qwen3Moe || hp.mla_family() || hp.arch == Arch::GptOss || hp.arch == Arch::Qwen35Moe) {
            throw RuntimeError("BAD_METADATA", a + "expert_count must be above 0 for " + hp.arch_str);
        }
        return;
    }
    // llama_model::load_hparams's checks, as typed errors instead of aborts
    const bool groups_ok = hp.n_expert_groups <= 1 || (hp.n_expert % hp.n_expert_groups == 0 && hp.n_group_used > 0 &&
                                                       hp.n_group_used < hp.n_expert_groups);
    if (hp.n_expert_used <= 0 || hp.n_expert_used > hp.n_expert || hp.n_expert_groups >= hp.n_expert || !groups_ok) {
        throw RuntimeError("BAD_METADATA", "expert counts do not fit: " + std::to_string(hp.n_expert) + " experts, " +
                                               std::to_string(hp.n_expert_used) + " used, " +
                                               std::to_string(hp.n_expert_groups) + " groups, " +
                                               std::to_string(hp.n_group_used) + " groups used")
            .num("experts", (double) hp.n_expert)
            .num("used", (double) hp.n_expert_used);
    }
    hp.n_ff_exp = get_int(g, a + "expert_feed_forward_length").value_or(0);
    if (hp.n_ff_exp == 0) hp.n_ff_exp = hp.arch == Arch::Llama ? hp.n_ff : hp.n_ff / hp.n_expert_used;
    // only deepseek2's loader reads these: a file of another family that carries them is read as llama.cpp reads it
    if (hp.mla_family()) {
        hp.n_expert_shared = get_int(g, a + "expert_shared_count").value_or(0);
        hp.n_layer_dense_lead = get_int(g, a + "leading_dense_block_count").value_or(0);
        hp.expert_weights_scale = get_float(g, a + "expert_weights_scale").value_or(0.0f);
    }
    // qwen3moe and Mixtral normalise the top-k weights; gpt-oss softmaxes them instead; deepseek2 says
    hp.expert_weights_norm =
        hp.mla_family() ? get_int(g, a + "expert_weights_norm").value_or(0) != 0 : hp.arch != Arch::GptOss;
    hp.gating = hp.arch == Arch::GptOss ? Gating::SoftmaxWeight : Gating::Softmax;
    if (hp.mla_family()) {
        const int64_t f = get_int(g, a + "expert_gating_func").value_or(0);
        if (f < 0 || f > 4)
            throw RuntimeError("BAD_METADATA", a + "expert_gating_func " + std::to_string(f) + " is unknown");
        // files without it: softmax (DeepSeek-V2/V2.5), except GLM-4.7-Lite's sigmoid
        const bool glm_lite = (hp.n_layer == 47 || hp.n_layer == 48) && hp.n_vocab == 154880;
        hp.gating = f != 0 ? (Gating) f : glm_lite || hp.arch == Arch::GlmDsa ? Gating::Sigmoid : Gating::Softmax;
    }
    // only deepseek2's and glm-dsa's graphs group experts
    if (!hp.mla_family()) hp.n_expert_groups = hp.n_group_used = 0;
}

// llama_model_qwen35moe::load_arch_hparams: delta-net sizes, M-RoPE sections, which blocks are recurrent.
// block_count includes the MTP (next-token prediction) blocks, which the main pass never runs: they are dropped.
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

// Sizes a graph can be built over: ggml aborts the process on shapes that do not fit, and a hostile
// artifact may state anything.
void check_sizes(const HParams & hp) {
    auto bad = [&](const std::string & what, int64_t v) {
        throw RuntimeError("BAD_METADATA",
                           what + " is " + std::to_string(v) + ", which no model of " + hp.arch_str + " can have")
            .str("key", what)
            .num("value", (double) v);
    };
    const std::pair<const char *, int64_t> positive[] = {
        {"embedding_length", hp.n_embd},          {"block_count", hp.n_layer},
        {"attention.head_count", hp.n_head},      {"attention.head_count_kv", hp.n_head_kv},
        {"attention.key_length", hp.n_embd_head}, {"rope.dimension_count", hp.n_rot}};
    for (const auto & [what, v] : positive) {
        if (v <= 0 || v > MAX_DIM) bad(what, v);
    }
    if (hp.n_head % hp.n_head_kv != 0) bad("attention.head_count_kv (not a divisor of head_count)", hp.n_head_kv);
    if (hp.n_rot % 2 != 0) bad("rope.dimension_count (odd)", hp.n_rot);
    if (hp.n_ff < 0 || hp.n_ff > MAX_DIM) bad("feed_forward_length", hp.n_ff);
    const bool dense_blocks = hp.n_expert == 0 || hp.n_layer_dense_lead > 0;
    if (dense_blocks && hp.n_ff <= 0) bad("feed_forward_length", hp.n_ff);
    if (hp.n_expert > 0) {
        if (hp.n_expert > 1024) bad("expert_count", hp.n_expert);
        if (hp.n_ff_exp <= 0 || hp.n_ff_exp > MAX_DIM) bad("expert_feed_forward_length", hp.n_ff_exp);
        if (hp.n_layer_dense_lead < 0 || hp.n_layer_dense_lead > hp.n_layer)
            bad("leading_dense_block_count", hp.n_layer_dense_lead);
        if (hp.n_expert_shared < 0 || hp.n_expert_shared > hp.n_expert) bad("expert_shared_count", hp.n_expert_shared);
        if (hp.mla_family() && hp.n_expert_shared == 0) bad("expert_shared_count", 0);
    }
    if (hp.is_mla()) {
        if (hp.n_lora_kv > MAX_DIM) bad("attention.kv_lora_rank", hp.n_lora_kv);
        if (hp.n_lora_q <= 0 || hp.n_lora_q > MAX_DIM) bad("attention.q_lora_rank", hp.n_lora_q);
        if (hp.n_embd_head_k_mla > MAX_DIM) bad("attention.key_length_mla", hp.n_embd_head_k_mla);
        if (hp.n_embd_head_v_mla <= 0 || hp.n_embd_head_v_mla > MAX_DIM)
            bad("attention.value_length_mla", hp.n_embd_head_v_mla);
    }
    if (hp.arch == Arch::GptOss && (hp.n_swa <= 0 || hp.n_swa > (1 << 24))) bad("attention.sliding_window", hp.n_swa);
    if (hp.arch == Arch::Qwen35Moe) {
        if (hp.ssm_d_conv < 2 || hp.ssm_d_conv > 1024) bad("ssm.conv_kernel", hp.ssm_d_conv);
        const std::pair<const char *, int64_t> ssm[] = {{"ssm.inner_size", hp.ssm_d_inner},
                                                        {"ssm.state_size", hp.ssm_d_state},
                                                        {"ssm.time_step_rank", hp.ssm_dt_rank},
                                                        {"ssm.group_count", hp.ssm_n_group},
                                                        {"expert_shared_feed_forward_length", hp.n_ff_shexp}};
        for (const auto & [what, v] : ssm) {
            if (v <= 0 || v > MAX_DIM) bad(what, v);
        }
        // the graph views the state as [d_state, d_state, value heads] and repeats key heads over value heads
        if (hp.ssm_d_inner != hp.ssm_d_state * hp.ssm_dt_rank)
            bad("ssm.inner_size (not state_size x time_step_rank)", hp.ssm_d_inner);
        if (hp.ssm_dt_rank % hp.ssm_n_group != 0)
            bad("ssm.group_count (not a divisor of time_step_rank)", hp.ssm_n_group);
        if (hp.n_embd_s() > (1 << 28) || hp.n_embd_r() > (1 << 28))
            bad("ssm.state_size (state too large)", hp.ssm_d_state);
        int64_t sum = 0;
        for (int s : hp.rope_sections) {
            if (s < 0 || s > MAX_DIM) bad("rope.dimension_sections", s);
            sum += s;
        }
        if (sum == 0) bad("rope.dimension_sections (sum)", 0);
        if (hp.n_rot > hp.n_embd_head) bad("rope.dimension_count (above key_length)", hp.n_rot);
    }
}

}  // namespace

HParams read_hparams(const gguf_context * g, const std::string & path) {
    HParams hp;
    auto arch = get_str(g, "general.architecture");
    if (!arch) throw RuntimeError("BAD_METADATA", "artifact " + path + " lacks general.architecture").str("file", path);
    hp.arch_str = *arch;
    const ArchInfo * info = nullptr;
    std::vector<std::string> names;
    for (const auto & a : ARCHS) {
        names.push_back(a.name);
        if (*arch == a.name) info = &a;
    }
    if (!info) {
        throw RuntimeError("UNSUPPORTED_ARCH",
                           "architecture '" + *arch + "' is not supported; supported: " + join_names(names))
            .str("arch", *arch)
            .list("supported", names);
    }
    hp.arch = info->arch;
    hp.rope_type = info->rope_type;
    const std::string a = *arch + ".";
    hp.n_embd = require_int(g, a + "embedding_length", path);
    hp.n_layer = require_int(g, a + "block_count", path);
    hp.n_head = require_int(g, a + "attention.head_count", path);
    // before anything divides by them or sizes a per-block array with them
    if (hp.n_embd <= 0 || hp.n_embd > MAX_DIM || hp.n_head <= 0 || hp.n_head > MAX_DIM || hp.n_layer <= 0 ||
        hp.n_layer > MAX_BLOCKS) {
        throw RuntimeError("BAD_METADATA", "embedding_length " + std::to_string(hp.n_embd) + ", head_count " +
                                               std::to_string(hp.n_head) + " and block_count " +
                                               std::to_string(hp.n_layer) + " must be positive and at most " +
                                               std::to_string(MAX_DIM) + ", " + std::to_string(MAX_DIM) + " and " +
                                               std::to_string(MAX_BLOCKS))
            .str("file", path);
    }
    hp.n_head_kv = get_int(g, a + "attention.head_count_kv").value_or(hp.n_head);
    hp.n_ff = get_int(g, a + "feed_forward_length").value_or(0);
    hp.n_ctx_train = get_int(g, a + "context_length").value_or(0);
    const auto key_length = get_int(g, a + "attention.key_length");
    hp.n_embd_head = key_length ? *key_length : hp.n_embd / hp.n_head;
    const int64_t n_embd_head_v = get_int(g, a + "attention.value_length").value_or(hp.n_embd_head);
    hp.n_rot = get_int(g, a + "rope.dimension_count").value_or(hp.n_embd_head);
    if (hp.mla_family()) {
        hp.n_lora_q = get_int(g, a + "attention.q_lora_rank").value_or(0);
        hp.n_lora_kv = require_int(g, a + "attention.kv_lora_rank", path);
        hp.n_embd_head_k_mla = get_int(g, a + "attention.key_length_mla").value_or(0);
        hp.n_embd_head_v_mla = get_int(g, a + "attention.value_length_mla").value_or(0);
        // only the absorbed MLA layout (split attn_k_b / attn_v_b, one latent "head") is served
        if (hp.n_lora_kv <= 0 || hp.n_embd_head_k_mla == 0 || hp.n_embd_head_v_mla == 0 || hp.n_head_kv != 1 ||
            hp.n_embd_head != hp.n_lora_kv + hp.n_rot || n_embd_head_v != hp.n_lora_kv) {
            unsupported("a deepseek2 model without the absorbed MLA layout (key_length_mla, value_length_mla, "
                        "head_count_kv = 1)");
        }
        if ((hp.arch == Arch::DeepSeek2 && (hp.n_layer == 26 || hp.n_layer == 27)) || hp.n_lora_q == 0)
            unsupported("the deepseek2 \"lite\" layout (no q_lora_rank)");
        if (hp.n_embd_head_k_mla <= hp.n_rot)
            throw RuntimeError("BAD_METADATA", "key_length_mla must exceed the rope dimension");
    } else {
        if (n_embd_head_v != hp.n_embd_head) unsupported("key_length != value_length");
        // Qwen3.5 rotates a part of each head (partial_rotary_factor); ggml_rope_multi passes the rest through
        if (hp.n_rot != hp.n_embd_head && hp.arch != Arch::Qwen35Moe && hp.arch != Arch::DeepSeek4)
            unsupported("partial rotary embeddings");
    }
    if (auto v = get_int(g, a + "vocab_size")) {
        hp.n_vocab = *v;
    } else {
        const int64_t id = gguf_find_key(g, "tokenizer.ggml.tokens");
        if (id >= 0) hp.n_vocab = (int64_t) gguf_get_arr_n(g, id);
    }
    hp.rms_eps = get_float(g, a + "attention.layer_norm_rms_epsilon").value_or(1e-5f);
    hp.freq_base = get_float(g, a + "rope.freq_base").value_or(10000.0f);
    if (auto v = get_float(g, a + "attention.temperature_scale"); v && *v != 0.0f)
        unsupported("attention temperature scaling");
    if (hp.arch == Arch::Qwen35Moe) read_qwen35(g, a, path, hp);
    if (hp.arch == Arch::GlmDsa) read_glm_dsa(g, a, path, hp);
    read_experts(g, a, hp);
    if (hp.arch == Arch::DeepSeek4) read_deepseek4(g, a, path, hp);
    if (hp.n_expert == 0 && hp.n_ff == 0)
        throw RuntimeError("BAD_METADATA", "artifact " + path + " lacks metadata key " + a + "feed_forward_length");
    if (hp.arch == Arch::GptOss) {
        hp.n_swa = require_int(g, a + "attention.sliding_window", path);
        read_swa_layers(g, a + "attention.sliding_window_pattern", hp);
        hp.freq_base_swa = get_float(g, a + "rope.freq_base_swa").value_or(hp.freq_base);
    }

    // rope scaling, as llama_model::load_hparams + llama_context resolve it
    const std::string scaling = get_str(g, a + "rope.scaling.type").value_or("linear");
    if (scaling != "none" && scaling != "linear" && scaling != "yarn") unsupported("rope scaling '" + scaling + "'");
    float factor = get_float(g, a + "rope.scaling.factor").value_or(0.0f);
    if (factor == 0.0f) factor = get_float(g, a + "rope.scale_linear").value_or(0.0f);
    hp.freq_scale = factor == 0.0f ? 1.0f : 1.0f / factor;
    if (scaling == "none") hp.freq_scale = 1.0f;
    hp.n_ctx_orig = (int) get_int(g, a + "rope.scaling.original_context_length").value_or(hp.n_ctx_train);
    hp.ext_factor = scaling == "yarn" ? 1.0f : 0.0f;
    // only deepseek2 reads it, and cancels the convert script's factor: [TAG_DEEPSEEK2_YARN_LOG_MUL_FIX]
    const float yarn_log_mul =
        hp.arch == Arch::DeepSeek2 ? get_float(g, a + "rope.scaling.yarn_log_multiplier").value_or(0.0f) / 0.1f : 0.0f;
    hp.attn_factor = 1.0f;
    if (hp.ext_factor != 0.0f) {
        const float f = 1.0f / hp.freq_scale;
        auto get_mscale = [](float scale, float mscale) {
            return scale <= 1.0f ? 1.0f : 0.1f * mscale * logf(scale) + 1.0f;
        };
        if (yarn_log_mul != 0.0f) {
            const float mscale = hp.arch == Arch::DeepSeek2 && yarn_log_mul != 1.0f ? yarn_log_mul : 1.0f;
            hp.attn_factor = get_mscale(f, mscale) / get_mscale(f, yarn_log_mul);
        } else {
            hp.attn_factor = get_mscale(f, 1.0f);
        }
        hp.attn_factor *= 1.0f / (1.0f + 0.1f * logf(f));
    }
    hp.attn_factor *= get_float(g, a + "rope.scaling.attn_factor").value_or(1.0f);
    hp.beta_fast = get_float(g, a + "rope.scaling.yarn_beta_fast").value_or(32.0f);
    hp.beta_slow = get_float(g, a + "rope.scaling.yarn_beta_slow").value_or(1.0f);
    hp.kq_scale = 1.0f / sqrtf(float(hp.n_embd_head));
    if (hp.arch == Arch::Llama) {
        if (auto s = get_float(g, a + "attention.scale"); s && *s != 0.0f) hp.kq_scale = *s;
    }
    check_sizes(hp);
    if (hp.arch == Arch::DeepSeek4) check_deepseek4(hp);
    if (hp.mla_family()) {
        // deepseek2.cpp pre-scales kq_scale for YaRN: undo the context's adjustment, then apply log_mul's mscale
        const float attn_factor_org = hp.attn_factor * (1.0f + 0.1f * logf(1.0f / hp.freq_scale));
        const float mscale = attn_factor_org * (1.0f + 0.1f * yarn_log_mul * logf(1.0f / hp.freq_scale));
        hp.kq_scale = mscale * mscale / sqrtf(float(hp.n_embd_head_k_mla));
    }
    return hp;
}

}  // namespace neuron
