#include "hparams.h"

#include <cmath>
#include <vector>

#include "errors.h"
#include "hparams_deepseek4.h"
#include "hparams_parts.h"

namespace neuron {

namespace {

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
