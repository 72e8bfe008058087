// glm-dsa's lightning indexer and sparse attention mask (llama.cpp src/models/glm-dsa.cpp and llama-graph.cpp's
// build_attn for llm_graph_input_attn_k_dsa), with the fused
// ggml_lightning_indexer llama.cpp picks (cparams.fused_lid).
#include <algorithm>
#include <cmath>

#include "graph.h"

namespace neuron {

ggml_tensor * GraphBuilder::dsa_top_k(int il, ggml_tensor * x, ggml_tensor * qr) {
    const Layer & L = model.layer(il);
    const int64_t D = hp.indexer_head_size, H = hp.indexer_n_head;
    if (!inp_kq_mask_lid) {
        // the fused indexer takes an f16 mask; the rotation is llama.cpp's Walsh-Hadamard matrix as wide as a head
        inp_kq_mask_lid = ggml_new_tensor_2d(ctx0, GGML_TYPE_F16, n_kv, n_tokens);
        ggml_set_name(inp_kq_mask_lid, "inp_kq_mask_lid");
        ggml_set_input(inp_kq_mask_lid);
        inp_k_rot = ggml_new_tensor_2d(ctx0, GGML_TYPE_F32, D, D);
        ggml_set_name(inp_k_rot, "inp_k_rot");
        ggml_set_input(inp_k_rot);
    }
    // queries from the low-rank query, one key per token; both [rope | nope], roped, then rotated
    ggml_tensor * q = ggml_reshape_3d(ctx0, ggml_mul_mat(ctx0, L.indexer_attn_q_b, qr), D, H, n_tokens);
    q = rope(q, il);
    // LLM_NORM: glm-dsa leaves f_norm_eps 0
    ggml_tensor * k = ggml_norm(ctx0, ggml_mul_mat(ctx0, L.indexer_attn_k, x), 0.0f);
    if (L.indexer_k_norm) k = ggml_mul(ctx0, k, L.indexer_k_norm);
    if (L.indexer_k_norm_b) k = ggml_add(ctx0, k, L.indexer_k_norm_b);
    k = rope(ggml_reshape_3d(ctx0, k, D, 1, n_tokens), il);
    q = ggml_mul_mat(ctx0, inp_k_rot, q);
    k = ggml_mul_mat(ctx0, inp_k_rot, k);

    ggml_tensor * cache = kv.idx_k[il - kv.il0];
    ggml_build_forward_expand(gf,
                              ggml_set_rows(ctx0, cache, ggml_view_2d(ctx0, k, D, n_tokens, k->nb[2], 0), inp_kv_idxs));
    // per-head weights, pre-scaled so the score needs no scaling
    ggml_tensor * w = ggml_scale(ctx0, ggml_mul_mat(ctx0, L.indexer_proj, x), 1.0f / sqrtf(float(D * H)));
    ggml_tensor * kc = ggml_view_3d(ctx0, cache, D, 1, n_kv, cache->nb[1], cache->nb[1], 0);
    // sum over heads of relu(q . k) x weight, + the causal mask: [n_kv, n_tokens]
    ggml_tensor * score = ggml_lightning_indexer(ctx0, q, kc, w, inp_kq_mask_lid);
    // a context shorter than top_k keeps every cell (llama.cpp: n_top_k = min(n_kv, top_k))
    return ggml_cont(ctx0, ggml_top_k(ctx0, score, std::min<int64_t>(n_kv, hp.indexer_top_k)));
}

ggml_tensor * GraphBuilder::dsa_mask(ggml_tensor * top_k) const {
    // -inf everywhere, 0 at each token's top-k cells (as rows of one value), then + the causal mask
    ggml_tensor * all = ggml_fill(ctx0, inp_kq_mask, -INFINITY);
    all = ggml_view_4d(ctx0, all, 1, all->ne[0], all->ne[1], all->ne[3], all->nb[0], all->nb[1], all->nb[2], 0);
    ggml_tensor * idx = ggml_view_4d(ctx0, top_k, top_k->ne[0], top_k->ne[1], top_k->ne[3], 1, top_k->nb[1],
                                     top_k->nb[2], top_k->ne[3] * top_k->nb[3], 0);
    ggml_tensor * zeros =
        ggml_fill(ctx0, ggml_new_tensor_4d(ctx0, GGML_TYPE_F32, 1, idx->ne[0], idx->ne[1], idx->ne[2]), 0.0f);
    ggml_tensor * m = ggml_set_rows(ctx0, all, zeros, idx);
    m = ggml_view_4d(ctx0, m, m->ne[1], m->ne[2], 1, m->ne[3], m->nb[2], m->nb[3], m->nb[3], 0);
    return ggml_add(ctx0, m, inp_kq_mask);
}

}  // namespace neuron
