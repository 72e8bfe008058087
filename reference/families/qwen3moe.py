"""qwen3moe (src/models/qwen3moe.cpp): qwen3's attention; every block's FFN is experts with a softmax
router, top-k, and the chosen weights always renormalised (llama.cpp passes norm_w = true whatever
the model's norm_topk_prob), then scaled by expert_weights_scale when set."""
from layers import pre_norm_block, self_attention
from moe import SOFTMAX, Experts, moe_ffn


def block(m, il, x, pos):
    def ffn(p, h):
        return moe_ffn(h, Experts(m, p), m.n_expert_used, SOFTMAX, True, m.expert_weights_scale, margins=m.router_margins)

    return pre_norm_block(m, il, x, lambda p, h: self_attention(m, p, h, pos, qk_norm=True), ffn)
