// llama / mistral / tinyllama, and Mixtral (llama with experts: the FFN routes them): llama.cpp src/models/llama.cpp.
#include "graph.h"

namespace neuron {

ggml_tensor * build_llama(GraphBuilder & g, InputKind kind) {
    ggml_tensor * inpL = g.input(kind);
    for (int il = g.il0; il < g.il1; ++il) {
        const Layer & L = g.model.layer(il);
        ggml_tensor *q, *k, *v;
        g.qkv(L, g.rms_norm(inpL, L.attn_norm), q, k, v);
        q = g.rope(q, il);
        k = g.rope(k, il);
        inpL = g.ffn_residual(il, g.attention(il, q, k, v), inpL);
    }
    return g.output(inpL);
}

}  // namespace neuron
