// qwen2: llama.cpp src/models/qwen2.cpp — llama's block with q/k/v biases and NEOX RoPE. gpt-oss
// (src/models/openai-moe.cpp) is the same block: attention adds its sinks, an output bias and the sliding
// window on alternate blocks; its pre-FFN norm (post_attention_norm) loads as ffn_norm; its experts are biased.
#include "graph.h"

namespace neuron {

ggml_tensor * build_qwen2(GraphBuilder & g, InputKind kind) {
    ggml_tensor * inpL = g.input(kind);
    for (int il = g.il0; il < g.il1; ++il) {
        const Layer & L = g.model.layer(il);
        ggml_tensor *q, *k, *v;
        g.qkv(L, g.rms_norm(inpL, L.attn_norm), q, k, v);  // adds bq/bk/bv
        q = g.rope(q, il);
        k = g.rope(k, il);
        inpL = g.ffn_residual(il, g.attention(il, q, k, v), inpL);
    }
    return g.output(inpL);  // adds output.bias when present
}

}  // namespace neuron
