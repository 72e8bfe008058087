// Mixture-of-experts metadata: how many experts, how many each token uses, their groups and gating function.
#include "errors.h"
#include "hparams_parts.h"

namespace neuron {

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

}  // namespace neuron
