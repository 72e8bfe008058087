// Mixture of experts: llama.cpp's build_moe_ffn (src/llama-graph.cpp) for the gatings our families use.
#include <cmath>

#include "graph.h"

namespace neuron {

ggml_tensor * GraphBuilder::moe_ffn(const Layer & L, ggml_tensor * cur) const {
    const int64_t n_embd = cur->ne[0];
    const int64_t n_tok = cur->ne[1];
    const int64_t n_expert = hp.n_expert;
    const int64_t n_used = hp.n_expert_used;

    ggml_tensor * logits = ggml_mul_mat(ctx0, L.ffn_gate_inp, cur);  // [n_expert, n_tok]
    if (hp.gating == Gating::SqrtSoftplus) ggml_mul_mat_set_prec(logits, GGML_PREC_F32);
    if (L.ffn_gate_inp_b) logits = ggml_add(ctx0, logits, L.ffn_gate_inp_b);

    ggml_tensor * probs = logits;
    switch (hp.gating) {
        case Gating::Sigmoid: probs = ggml_sigmoid(ctx0, logits); break;
        case Gating::SoftmaxWeight: break;  // the softmax comes after the top-k
        case Gating::SqrtSoftplus: probs = ggml_sqrt(ctx0, ggml_softplus(ctx0, logits)); break;
        default: probs = ggml_soft_max(ctx0, logits); break;
    }
    // DeepSeek-V3's selection bias chooses experts but does not weight them
    ggml_tensor * selection = L.ffn_exp_probs_b ? ggml_add(ctx0, probs, L.ffn_exp_probs_b) : probs;

    if (hp.n_expert_groups > 1 && n_tok > 0) {
        // keep the n_group_used groups whose two best experts score highest
        const int64_t per_group = n_expert / hp.n_expert_groups;
        ggml_tensor * groups = ggml_reshape_3d(ctx0, selection, per_group, hp.n_expert_groups, n_tok);
        ggml_tensor * scores = ggml_argsort_top_k(ctx0, groups, 2);
        scores =
            ggml_get_rows(ctx0, ggml_reshape_4d(ctx0, groups, 1, groups->ne[0], groups->ne[1], groups->ne[2]), scores);
        scores = ggml_sum_rows(ctx0, ggml_reshape_3d(ctx0, scores, scores->ne[1], scores->ne[2], scores->ne[3]));
        scores = ggml_reshape_2d(ctx0, scores, scores->ne[1], scores->ne[2]);
        ggml_tensor * kept = ggml_argsort_top_k(ctx0, scores, hp.n_group_used);
        selection = ggml_get_rows(ctx0, groups, kept);
        selection = ggml_set_rows(ctx0, ggml_fill(ctx0, groups, -INFINITY), selection, kept);
        selection = ggml_reshape_2d(ctx0, selection, n_expert, n_tok);
    }

    ggml_tensor * selected = ggml_argsort_top_k(ctx0, selection, n_used);  // [n_used, n_tok]
    // [1, n_used, n_tok]
    ggml_tensor * weights = ggml_get_rows(ctx0, ggml_reshape_3d(ctx0, probs, 1, n_expert, n_tok), selected);
    if (hp.gating == Gating::SoftmaxWeight) {
        weights =
            ggml_reshape_3d(ctx0, ggml_soft_max(ctx0, ggml_reshape_2d(ctx0, weights, n_used, n_tok)), 1, n_used, n_tok);
    }
    if (hp.expert_weights_norm) {
        weights = ggml_reshape_2d(ctx0, weights, n_used, n_tok);
        // clamped to the smallest normal f16, as llama.cpp does, so a zero sum cannot divide by zero
        ggml_tensor * sum = ggml_clamp(ctx0, ggml_sum_rows(ctx0, weights), 6.103515625e-5, INFINITY);
        weights = ggml_reshape_3d(ctx0, ggml_div(ctx0, weights, sum), 1, n_used, n_tok);
    }
    if (hp.expert_weights_scale != 0.0f && hp.expert_weights_scale != 1.0f)
        weights = ggml_scale(ctx0, weights, hp.expert_weights_scale);
    ggml_build_forward_expand(gf, weights);

    cur = ggml_reshape_3d(ctx0, cur, n_embd, 1, n_tok);
    ggml_tensor * up = nullptr;
    ggml_tensor * gate = nullptr;
    if (L.ffn_gate_up_exps) {
        // llama.cpp's merged path: one product, then gate and up as views of its halves
        // [2 n_ff_exp, n_used, n_tok]
        ggml_tensor * gate_up = ggml_mul_mat_id(ctx0, L.ffn_gate_up_exps, cur, selected);
        const int64_t n_ff = gate_up->ne[0] / 2;
        gate = ggml_view_3d(ctx0, gate_up, n_ff, gate_up->ne[1], gate_up->ne[2], gate_up->nb[1], gate_up->nb[2], 0);
        up = ggml_view_3d(ctx0, gate_up, n_ff, gate_up->ne[1], gate_up->ne[2], gate_up->nb[1], gate_up->nb[2],
                          n_ff * gate_up->nb[0]);
    } else {
        up = ggml_mul_mat_id(ctx0, L.ffn_up_exps, cur, selected);  // [n_ff_exp, n_used, n_tok]
        if (L.ffn_up_exps_b) up = ggml_add_id(ctx0, up, L.ffn_up_exps_b, selected);
        gate = ggml_mul_mat_id(ctx0, L.ffn_gate_exps, cur, selected);
        if (L.ffn_gate_exps_b) gate = ggml_add_id(ctx0, gate, L.ffn_gate_exps_b, selected);
    }
    // gpt-oss: its clamped SwiGLU (alpha 1.702, limit 7, as llama.cpp hard-codes them)
    ggml_tensor * act =
        hp.arch == Arch::GptOss ? ggml_swiglu_oai(ctx0, gate, up, 1.702f, 7.0f) : ggml_swiglu_split(ctx0, gate, up);
    ggml_tensor * experts = ggml_mul_mat_id(ctx0, L.ffn_down_exps, act, selected);  // [n_embd, n_used, n_tok]
    if (L.ffn_down_exps_b) experts = ggml_add_id(ctx0, experts, L.ffn_down_exps_b, selected);
    experts = ggml_mul(ctx0, experts, weights);
    ggml_build_forward_expand(gf, experts);

    // the views first, then the adds, in llama.cpp's order
    std::vector<ggml_tensor *> views((size_t) n_used);
    for (int64_t i = 0; i < n_used; ++i) {
        views[i] = ggml_view_2d(ctx0, experts, n_embd, n_tok, experts->nb[2], i * experts->nb[1]);
        ggml_build_forward_expand(gf, views[i]);
    }
    ggml_tensor * out = views[0];
    for (int64_t i = 1; i < n_used; ++i) {
        out = ggml_add(ctx0, out, views[i]);
        ggml_build_forward_expand(gf, out);
    }
    return n_used == 1 ? ggml_cont(ctx0, out) : out;
}

ggml_tensor * GraphBuilder::mla_attention(int il, ggml_tensor * x, ggml_tensor * qr) {
    const Layer & L = model.layer(il);
    const int64_t n_rope = hp.n_rot;
    const int64_t n_nope = hp.n_embd_head_k_mla - n_rope;
    const int64_t n_lora = hp.n_lora_kv;

    if (!qr) qr = rms_norm(ggml_mul_mat(ctx0, L.wq_a, x), L.attn_q_a_norm);
    ggml_tensor * q = ggml_mul_mat(ctx0, L.wq_b, qr);
    q = ggml_reshape_3d(ctx0, q, hp.n_embd_head_k_mla, hp.n_head, n_tokens);

    ggml_tensor * kv_pe = ggml_mul_mat(ctx0, L.wkv_a_mqa, x);  // [n_lora + n_rope, n_tokens]
    const size_t row = ggml_row_size(kv_pe->type, n_lora + n_rope);
    ggml_tensor * kv_cmpr = ggml_view_2d(ctx0, kv_pe, n_lora, n_tokens, row, 0);
    ggml_tensor * k_pe = ggml_view_3d(ctx0, kv_pe, n_rope, 1, n_tokens, row, row, ggml_row_size(kv_pe->type, n_lora));
    k_pe = rope(k_pe, il);
    kv_cmpr = rms_norm(kv_cmpr, L.attn_kv_a_norm);

    ggml_tensor * q_nope = ggml_view_3d(ctx0, q, n_nope, hp.n_head, n_tokens, q->nb[1], q->nb[2], 0);
    ggml_tensor * q_pe =
        ggml_view_3d(ctx0, q, n_rope, hp.n_head, n_tokens, q->nb[1], q->nb[2], ggml_row_size(q->type, n_nope));
    q_pe = rope(q_pe, il);
    // absorb wk_b into the query: {n_nope, n_lora, n_head} x {n_nope, n_tokens, n_head}
    ggml_tensor * q_abs = ggml_mul_mat(ctx0, L.wk_b, ggml_permute(ctx0, q_nope, 0, 2, 1, 3));
    q_abs = ggml_permute(ctx0, q_abs, 0, 2, 1, 3);  // [n_lora, n_head, n_tokens]

    ggml_tensor * Q = ggml_concat(ctx0, q_abs, q_pe, 0);
    kv_cmpr = ggml_reshape_3d(ctx0, kv_cmpr, n_lora, 1, n_tokens);
    ggml_tensor * K = ggml_concat(ctx0, kv_cmpr, k_pe, 0);  // one latent "head": MQA
    return attention(il, Q, K, kv_cmpr);
}

}  // namespace neuron
