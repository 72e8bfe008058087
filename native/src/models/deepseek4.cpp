// deepseek4 (DeepSeek-V4-Flash): llama.cpp src/models/deepseek4.cpp. Four hyper-connection streams of n_embd
// run between blocks (a hop's hidden state is hc x n_embd per token): each block mixes them into one input
// (pre weights), runs attention or the FFN, and writes back (post weights, plus a Sinkhorn-normalised
// stream-to-stream mix). The first hash_layer_count blocks pick experts by token id; sqrt-softplus scores
// elsewhere; clamped SwiGLU; the head collapses the streams with its own weights.
#include <cmath>

#include "graph.h"
#include "graph_dsv4.h"

namespace neuron {

namespace {

// build_hc_pre: the streams' mixes from their RMS-normed concatenation; returns the block input
ggml_tensor * hc_pre(GraphBuilder & g, ggml_tensor * x, ggml_tensor * fn, ggml_tensor * scale, ggml_tensor * base,
                     ggml_tensor ** post, ggml_tensor ** comb) {
    ggml_context * ctx = g.ctx0;
    const auto & d = g.hp.dsv4;
    const int64_t hc = d.hc, nt = x->ne[2];
    ggml_tensor * flat = ggml_rms_norm(ctx, ggml_reshape_2d(ctx, x, hc * g.hp.n_embd, nt), g.hp.rms_eps);
    ggml_tensor * mixes = ggml_mul_mat(ctx, fn, flat);  // [(2 + hc) * hc, nt]
    auto f32 = [](int64_t i) { return ggml_row_size(GGML_TYPE_F32, i); };
    auto affine = [&](int64_t at, int64_t which) {
        ggml_tensor * m = ggml_view_2d(ctx, mixes, hc, nt, mixes->nb[1], f32(at));
        m = ggml_mul(ctx, m, ggml_view_1d(ctx, scale, 1, f32(which)));
        return ggml_sigmoid(ctx, ggml_add(ctx, m, ggml_view_1d(ctx, base, hc, f32(at))));
    };
    ggml_tensor * pre = ggml_scale_bias(ctx, affine(0, 0), 1.0f, d.hc_eps);
    *post = ggml_scale(ctx, affine(hc, 1), 2.0f);
    *comb = ggml_dsv4_hc_comb(ctx, mixes, scale, base, d.hc_eps, (int32_t) d.sinkhorn_iters);
    return ggml_dsv4_hc_pre(ctx, x, pre);
}

// llama.cpp's build_moe_ffn for deepseek4: experts chosen by the hash table (given) or the biased scores
ggml_tensor * experts(GraphBuilder & g, const Layer & L, ggml_tensor * cur, ggml_tensor * selected, float clamp) {
    ggml_context * ctx = g.ctx0;
    const HParams & hp = g.hp;
    const int64_t n_expert = hp.n_expert, n_used = hp.n_expert_used, n_tok = cur->ne[1], n_embd = cur->ne[0];
    ggml_tensor * logits = ggml_mul_mat(ctx, L.ffn_gate_inp, cur);
    ggml_mul_mat_set_prec(logits, GGML_PREC_F32);
    ggml_tensor * probs = ggml_sqrt(ctx, ggml_softplus(ctx, logits));
    if (!selected) selected = ggml_argsort_top_k(ctx, ggml_add(ctx, probs, L.ffn_exp_probs_b), n_used);
    ggml_tensor * weights = ggml_get_rows(ctx, ggml_reshape_3d(ctx, probs, 1, n_expert, n_tok), selected);
    if (hp.expert_weights_norm) {
        weights = ggml_reshape_2d(ctx, weights, n_used, n_tok);
        ggml_tensor * sum = ggml_clamp(ctx, ggml_sum_rows(ctx, weights), 6.103515625e-5, INFINITY);
        weights = ggml_reshape_3d(ctx, ggml_div(ctx, weights, sum), 1, n_used, n_tok);
    }
    if (hp.expert_weights_scale != 0.0f && hp.expert_weights_scale != 1.0f)
        weights = ggml_scale(ctx, weights, hp.expert_weights_scale);
    ggml_build_forward_expand(g.gf, weights);
    cur = ggml_reshape_3d(ctx, cur, n_embd, 1, n_tok);
    ggml_tensor * up = ggml_mul_mat_id(ctx, L.ffn_up_exps, cur, selected);
    ggml_tensor * gate = ggml_mul_mat_id(ctx, L.ffn_gate_exps, cur, selected);
    ggml_tensor * act = clamp > 1e-6f ? ggml_swiglu_clamp(ctx, gate, up, clamp) : ggml_swiglu_split(ctx, gate, up);
    ggml_tensor * out = ggml_mul(ctx, ggml_mul_mat_id(ctx, L.ffn_down_exps, act, selected), weights);
    ggml_build_forward_expand(g.gf, out);
    std::vector<ggml_tensor *> views((size_t) n_used);
    for (int64_t i = 0; i < n_used; ++i) {
        views[i] = ggml_view_2d(ctx, out, n_embd, n_tok, out->nb[2], i * out->nb[1]);
        ggml_build_forward_expand(g.gf, views[i]);
    }
    ggml_tensor * sum = views[0];
    for (int64_t i = 1; i < n_used; ++i) {
        sum = ggml_add(ctx, sum, views[i]);
        ggml_build_forward_expand(g.gf, sum);
    }
    return n_used == 1 ? ggml_cont(ctx, sum) : sum;
}

ggml_tensor * shared_expert(GraphBuilder & g, const Layer & L, ggml_tensor * x, float clamp) {
    ggml_context * ctx = g.ctx0;
    ggml_tensor * up = ggml_mul_mat(ctx, L.ffn_up_shexp, x);
    ggml_tensor * gate = ggml_mul_mat(ctx, L.ffn_gate_shexp, x);
    ggml_tensor * act = clamp > 1e-6f ? ggml_swiglu_clamp(ctx, gate, up, clamp) : ggml_swiglu_split(ctx, gate, up);
    return ggml_mul_mat(ctx, L.ffn_down_shexp, act);
}

// build_hc_head: one set of weights per token collapses the streams before the output norm
ggml_tensor * hc_head(GraphBuilder & g, ggml_tensor * x) {
    ggml_context * ctx = g.ctx0;
    const int64_t hc = g.hp.dsv4.hc, nt = x->ne[2], E = g.hp.n_embd;
    ggml_tensor * flat = ggml_rms_norm(ctx, ggml_reshape_2d(ctx, x, hc * E, nt), g.hp.rms_eps);
    ggml_tensor * pre = ggml_add(ctx, ggml_mul(ctx, ggml_mul_mat(ctx, g.model.hc_head_fn, flat), g.model.hc_head_scale),
                                 g.model.hc_head_base);
    pre = ggml_scale_bias(ctx, ggml_sigmoid(ctx, pre), 1.0f, g.hp.dsv4.hc_eps);
    // llama.cpp sums the weighted streams one by one here (the fused op serves the blocks only)
    ggml_tensor * out = nullptr;
    for (int64_t h = 0; h < hc; ++h) {
        ggml_tensor * xh = ggml_view_2d(ctx, x, E, nt, x->nb[2], h * x->nb[1]);
        ggml_tensor * wh = ggml_view_2d(ctx, pre, 1, nt, pre->nb[1], h * pre->nb[0]);
        ggml_tensor * cur = ggml_mul(ctx, xh, wh);
        out = out ? ggml_add(ctx, out, cur) : cur;
    }
    return out;
}

}  // namespace

ggml_tensor * build_deepseek4(GraphBuilder & g, InputKind kind) {
    ggml_context * ctx = g.ctx0;
    const HParams & hp = g.hp;
    const int64_t E = hp.n_embd, hc = hp.dsv4.hc, n = g.n_tokens;
    ggml_tensor * inpL = g.input(kind);
    // the first hop copies the embedding into every stream
    inpL = kind == InputKind::Tokens ? ggml_repeat_4d(ctx, ggml_reshape_3d(ctx, inpL, E, 1, n), E, hc, n, 1)
                                     : ggml_reshape_3d(ctx, inpL, E, hc, n);
    if (g.il1 > g.il0) ggml_build_forward_expand(g.gf, g.inp_kq_mask_swa);
    for (int il = g.il0; il < g.il1; ++il) {
        const Layer & L = g.model.layer(il);
        ggml_tensor * post = nullptr;
        ggml_tensor * comb = nullptr;
        ggml_tensor * residual = inpL;
        ggml_tensor * cur = hc_pre(g, inpL, L.hc_attn_fn, L.hc_attn_scale, L.hc_attn_base, &post, &comb);
        cur = dsv4_attention(g, *g.dsv4, il, g.rms_norm(cur, L.attn_norm));
        inpL = ggml_dsv4_hc_post(ctx, cur, residual, post, comb);

        residual = inpL;
        cur = hc_pre(g, inpL, L.hc_ffn_fn, L.hc_ffn_scale, L.hc_ffn_base, &post, &comb);
        ggml_build_forward_expand(g.gf, residual);
        ggml_build_forward_expand(g.gf, post);
        ggml_build_forward_expand(g.gf, comb);
        cur = g.rms_norm(cur, L.ffn_norm);
        ggml_tensor * selected =
            L.ffn_tid2eid ? ggml_get_rows(ctx, L.ffn_tid2eid, g.inp_token_ids ? g.inp_token_ids : g.inp_tokens)
                          : nullptr;
        cur = ggml_add(ctx, experts(g, L, cur, selected, hp.dsv4.clamp_exp[il]),
                       shared_expert(g, L, cur, hp.dsv4.clamp_shexp[il]));
        inpL = ggml_dsv4_hc_post(ctx, cur, residual, post, comb);
    }
    ggml_tensor * flat = ggml_reshape_2d(ctx, inpL, E * hc, n);
    if (!g.head) return flat;
    if (g.inp_out_ids) flat = ggml_get_rows(ctx, flat, g.inp_out_ids);
    ggml_tensor * cur = hc_head(g, ggml_reshape_3d(ctx, flat, E, hc, flat->ne[1]));
    cur = g.rms_norm(cur, g.model.output_norm);
    return ggml_mul_mat(ctx, g.model.output, cur);
}

}  // namespace neuron
