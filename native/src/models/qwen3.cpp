// qwen3: llama.cpp src/models/qwen3.cpp — RMS norms on Q and K (per head) before NEOX RoPE; qwen3moe
// (src/models/qwen3moe.cpp) is the same block with routed experts in the FFN.
#include "graph.h"

namespace neuron {

ggml_tensor * build_qwen3(GraphBuilder & g, InputKind kind) {
    ggml_tensor * inpL = g.input(kind);
    for (int il = g.il0; il < g.il1; ++il) {
        const Layer & L = g.model.layer(il);
        ggml_tensor *q, *k, *v;
        g.qkv(L, g.rms_norm(inpL, L.attn_norm), q, k, v);
        q = g.rope(g.rms_norm(q, L.q_norm), il);
        k = g.rope(g.rms_norm(k, L.k_norm), il);
        inpL = g.ffn_residual(il, g.attention(il, q, k, v), inpL);
    }
    return g.output(inpL);
}

}  // namespace neuron
