#include <utility>

#include "errors.h"
#include "hparams_parts.h"

namespace neuron {

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

}  // namespace neuron
