// qwen35moe's two attentions (llama.cpp src/models/qwen35moe.cpp and delta-net-base.cpp): the gated delta-net
// of its linear-attention blocks, with the fused ggml_gated_delta_net that llama.cpp picks on the CPU
// (cparams.fused_gdn_ar / fused_gdn_ch), and the full attention with an output gate of the other blocks.
#include "graph.h"

namespace neuron {

ggml_tensor * GraphBuilder::delta_net(int il, ggml_tensor * x) {
    const Layer & L = model.layer(il);
    const size_t i = (size_t) (il - kv.il0);
    const int64_t S = hp.ssm_d_state, H_k = hp.ssm_n_group, H_v = hp.ssm_dt_rank;
    const int64_t key_dim = S * H_k, value_dim = S * H_v, channels = hp.ssm_conv_channels(), d_conv = hp.ssm_d_conv;
    const int64_t n = n_tokens;

    // input projections: Q, K, V mixed for the convolution, the output gate z, beta and the decay
    ggml_tensor * qkv = ggml_mul_mat(ctx0, L.wqkv, x);
    qkv = ggml_reshape_3d(ctx0, qkv, qkv->ne[0], n, 1);
    ggml_tensor * z = ggml_mul_mat(ctx0, L.wqkv_gate, x);
    ggml_tensor * beta = ggml_reshape_4d(ctx0, ggml_mul_mat(ctx0, L.ssm_beta, x), 1, H_v, n, 1);
    beta = ggml_sigmoid(ctx0, beta);
    ggml_tensor * alpha = ggml_reshape_3d(ctx0, ggml_mul_mat(ctx0, L.ssm_alpha, x), H_v, n, 1);
    // -exp(A_log) * softplus
    ggml_tensor * gate = ggml_mul(ctx0, ggml_softplus(ctx0, ggml_add(ctx0, alpha, L.ssm_dt)), L.ssm_a);
    gate = ggml_reshape_4d(ctx0, gate, 1, H_v, n, 1);

    // the convolution sees the last d_conv - 1 inputs before this batch (the conv state), then the batch;
    // the batch's last d_conv - 1 become the new state (build_conv_state)
    ggml_tensor * conv_all = kv.conv[i];
    ggml_tensor * ssm_all = kv.ssm[i];
    ggml_tensor * conv_states = ggml_reshape_3d(ctx0, conv_all, d_conv - 1, channels, 1);
    ggml_tensor * conv_input = ggml_concat(ctx0, conv_states, ggml_transpose(ctx0, qkv), 0);
    ggml_tensor * conv_last = ggml_view_3d(ctx0, conv_input, d_conv - 1, channels, 1, conv_input->nb[1],
                                           conv_input->nb[2], ggml_row_size(conv_input->type, n));
    ggml_build_forward_expand(
        gf, ggml_cpy(ctx0, conv_last, ggml_view_2d(ctx0, conv_all, hp.n_embd_r(), 1, conv_all->nb[1], 0)));

    ggml_tensor * state = ggml_reshape_4d(ctx0, ssm_all, S, S, H_v, 1);
    ggml_tensor * conv = ggml_silu(ctx0, ggml_ssm_conv(ctx0, conv_input, L.ssm_conv1d));  // [channels, n, 1]
    const size_t es = ggml_element_size(conv);
    const size_t row = ggml_row_size(conv->type, channels);
    ggml_tensor * q = ggml_view_4d(ctx0, conv, S, H_k, n, 1, es * S, row, row * n, 0);
    ggml_tensor * k = ggml_view_4d(ctx0, conv, S, H_k, n, 1, es * S, row, row * n, es * key_dim);
    ggml_tensor * v = ggml_view_4d(ctx0, conv, S, H_v, n, 1, es * S, row, row * n, es * 2 * key_dim);
    q = ggml_l2_norm(ctx0, q, hp.rms_eps);
    k = ggml_l2_norm(ctx0, k, hp.rms_eps);
    // the fused op broadcasts key heads over value heads itself (no ggml_repeat, as llama.cpp's fused path)

    ggml_tensor * res = ggml_gated_delta_net(ctx0, q, k, v, gate, beta, state, 1);
    const size_t rs = ggml_element_size(res);
    ggml_tensor * out = ggml_view_4d(ctx0, res, S, H_v, n, 1, rs * S, rs * S * H_v, rs * S * H_v * n, 0);
    ggml_tensor * new_state =
        ggml_view_4d(ctx0, res, S, S, H_v, 1, rs * S, rs * S * S, rs * S * S * H_v, rs * S * H_v * n);
    ggml_build_forward_expand(
        gf, ggml_cpy(ctx0, new_state, ggml_view_2d(ctx0, ssm_all, hp.n_embd_s(), 1, ssm_all->nb[1], 0)));

    // gated RMS norm per head, then the output projection
    ggml_tensor * z4 = ggml_reshape_4d(ctx0, z, S, H_v, n, 1);
    ggml_tensor * cur = ggml_mul(ctx0, rms_norm(out, L.ssm_norm), ggml_silu(ctx0, z4));
    cur = ggml_mul_mat(ctx0, L.ssm_out, ggml_reshape_3d(ctx0, cur, value_dim, n, 1));
    return ggml_reshape_2d(ctx0, cur, hp.n_embd, n);
}

ggml_tensor * GraphBuilder::gated_attention(int il, ggml_tensor * x) {
    const Layer & L = model.layer(il);
    const int64_t hd = hp.n_embd_head, H = hp.n_head;
    // one projection yields each head's query followed by its output gate
    ggml_tensor * qg = ggml_mul_mat(ctx0, L.wq, x);  // [2 * hd * H, n_tokens]
    const size_t es = ggml_element_size(qg);
    ggml_tensor * q = ggml_view_3d(ctx0, qg, hd, H, n_tokens, es * hd * 2, es * hd * 2 * H, 0);
    q = rms_norm(q, L.q_norm);
    ggml_tensor * k = ggml_mul_mat(ctx0, L.wk, x);
    ggml_tensor * v = ggml_mul_mat(ctx0, L.wv, x);
    k = rms_norm(ggml_reshape_3d(ctx0, k, hd, hp.n_head_kv, n_tokens), L.k_norm);
    ggml_tensor * gate = ggml_view_3d(ctx0, qg, hd, H, n_tokens, es * hd * 2, es * hd * 2 * H, es * hd);
    gate = ggml_cont_2d(ctx0, gate, hd * H, n_tokens);
    v = ggml_reshape_3d(ctx0, v, hd, hp.n_head_kv, n_tokens);
    q = rope(q, il);
    k = rope(k, il);
    ggml_tensor * cur = ggml_mul(ctx0, attend(il, q, k, v), ggml_sigmoid(ctx0, gate));
    return ggml_mul_mat(ctx0, L.wo, cur);
}

}  // namespace neuron
