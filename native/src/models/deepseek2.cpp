// deepseek2 (DeepSeek-V2/V3, and the models built on them): llama.cpp src/models/deepseek2.cpp with
// absorbed MLA (the cache keeps a compressed latent), dense leading blocks, routed + shared experts.
#include "graph.h"

namespace neuron {

ggml_tensor * build_deepseek2(GraphBuilder & g, InputKind kind) {
    ggml_tensor * inpL = g.input(kind);
    for (int il = g.il0; il < g.il1; ++il) {
        const Layer & L = g.model.layer(il);
        inpL = g.ffn_residual(il, g.mla_attention(il, g.rms_norm(inpL, L.attn_norm)), inpL);
    }
    return g.output(inpL);
}

}  // namespace neuron
