// qwen35moe (Qwen3.5-MoE): llama.cpp src/models/qwen35moe.cpp — gated delta-net linear attention on most blocks,
// gated full attention every full_attention_interval blocks, then routed experts plus a sigmoid-gated shared expert.
#include "graph.h"

namespace neuron {

ggml_tensor * build_qwen35moe(GraphBuilder & g, InputKind kind) {
    ggml_tensor * inpL = g.input(kind);
    for (int il = g.il0; il < g.il1; ++il) {
        const Layer & L = g.model.layer(il);
        ggml_tensor * x = g.rms_norm(inpL, L.attn_norm);
        ggml_build_forward_expand(g.gf, x);
        ggml_tensor * attn = g.hp.is_recurrent(il) ? g.delta_net(il, x) : g.gated_attention(il, x);
        inpL = g.ffn_residual(il, attn, inpL);  // post_attention_norm loads as ffn_norm
    }
    return g.output(inpL);
}

}  // namespace neuron
