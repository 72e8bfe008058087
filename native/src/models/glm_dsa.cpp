// glm-dsa (GLM-5.x): llama.cpp src/models/glm-dsa.cpp — deepseek2's absorbed MLA, dense leading blocks, routed +
// shared experts, and a lightning indexer: each "full" block keeps every token's top-k cells, and it and the
// "shared" blocks after it attend to those cells only. A range that starts at a shared block attends with the
// previous hop's indices (inp_kq_mask_top_k); one that ends before a shared block returns its top-k (out_top_k).
#include "graph.h"

namespace neuron {

ggml_tensor * build_glm_dsa(GraphBuilder & g, InputKind kind) {
    ggml_tensor * inpL = g.input(kind);
    ggml_tensor * top_k = nullptr;  // the last full block's, in this graph
    ggml_tensor * mask = nullptr;   // the attention mask it makes
    if (g.il1 > g.il0 && !g.hp.is_indexer_full(g.il0)) {
        mask = g.inp_kq_mask_top_k = ggml_new_tensor_2d(g.ctx0, g.inp_kq_mask->type, g.n_kv, g.n_tokens);
        ggml_set_name(mask, "inp_kq_mask_top_k");
        ggml_set_input(mask);
    }
    for (int il = g.il0; il < g.il1; ++il) {
        const Layer & L = g.model.layer(il);
        ggml_tensor * x = g.rms_norm(inpL, L.attn_norm);
        ggml_tensor * qr = g.rms_norm(ggml_mul_mat(g.ctx0, L.wq_a, x), L.attn_q_a_norm);
        if (g.hp.is_indexer_full(il)) mask = g.dsa_mask(top_k = g.dsa_top_k(il, x, qr));
        g.attn_mask = mask;
        ggml_tensor * attn = g.mla_attention(il, x, qr);
        g.attn_mask = nullptr;
        inpL = g.ffn_residual(il, attn, inpL);
    }
    if (top_k && g.il1 < g.hp.n_layer && !g.hp.is_indexer_full(g.il1)) {
        g.out_top_k = top_k;
        ggml_set_output(top_k);
        ggml_build_forward_expand(g.gf, top_k);
    }
    return g.output(inpL);
}

}  // namespace neuron
