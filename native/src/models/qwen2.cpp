// qwen2: llama.cpp src/models/qwen2.cpp — llama's block with q/k/v biases and NEOX RoPE.
#include "graph.h"

namespace neuron {

ggml_tensor * build_qwen2(GraphBuilder & g, InputKind kind) {
    ggml_context * ctx0 = g.ctx0;
    ggml_tensor * inpL = g.input(kind);
    g.positions();

    for (int il = g.il0; il < g.il1; ++il) {
        const Layer & L = g.model.layer(il);
        ggml_tensor * inpSA = inpL;

        ggml_tensor * cur = g.rms_norm(inpL, L.attn_norm);
        ggml_tensor *q, *k, *v;
        g.qkv(L, cur, q, k, v);  // adds bq/bk/bv
        q = g.rope(q);
        k = g.rope(k);
        cur = g.attention(il, q, k, v);

        if (g.is_output_layer(il)) {
            cur = g.out_rows(cur);
            inpSA = g.out_rows(inpSA);
        }
        ggml_tensor * ffn_inp = ggml_add(ctx0, cur, inpSA);
        cur = g.ffn_swiglu(L, g.rms_norm(ffn_inp, L.ffn_norm));
        inpL = ggml_add(ctx0, cur, ffn_inp);
    }
    return g.output(inpL);  // adds output.bias when present
}

}  // namespace neuron
