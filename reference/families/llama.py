"""llama (src/models/llama.cpp): RMS norm, NORM rope (adjacent pairs), SwiGLU FFN. With experts
(Mixtral): softmax router, top-k, chosen weights renormalised to sum 1 (norm_w = true)."""
from layers import dense_ffn, pre_norm_block, self_attention
from moe import SOFTMAX, Experts, moe_ffn


def block(m, il, x, pos):
    def ffn(p, h):
        if not m.has(f"{p}.ffn_gate_inp.weight"):
            return dense_ffn(m, p, h)
        return moe_ffn(h, Experts(m, p), m.n_expert_used, SOFTMAX, True, m.expert_weights_scale, margins=m.router_margins)

    return pre_norm_block(m, il, x, lambda p, h: self_attention(m, p, h, pos), ffn)
