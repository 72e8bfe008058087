"""gpt-oss (src/models/openai-moe.cpp): attention with a learned sink logit per head (attn_sinks),
Q/K/V/output biases, NEOX rope, scale 1/sqrt(n_rot); sliding-window attention on the layers where
il % pattern < pattern - 1 (pattern 2 by default: even layers slide, odd layers are full), a key
masked when q_pos - k_pos >= sliding_window; SWA layers use rope.freq_base_swa when present.
FFN: post_attention_norm, experts with biases, router bias, top-k on the raw router logits then a
softmax over the chosen ones (SOFTMAX_WEIGHT, no renormalisation), swiglu_oai (alpha 1.702, limit 7)."""
from layers import pre_norm_block, self_attention
from moe import SOFTMAX_WEIGHT, Experts, moe_ffn
from ops import Rope


def is_swa(m, il):
    pattern = m.src.hp("attention.sliding_window_pattern", 2)
    pattern = int(pattern) if not isinstance(pattern, list) else len(pattern)
    return pattern == 0 or il % pattern < pattern - 1


def block(m, il, x, pos):
    swa = is_swa(m, il)
    window = int(m.src.hp("attention.sliding_window", 0)) if swa else 0
    rope = m.rope
    base_swa = m.src.hp("rope.freq_base_swa")
    if swa and base_swa is not None:
        r = m.rope
        rope = Rope(r.n_rot, r.neox, float(base_swa), r.freq_scale, r.ext_factor, r.attn_factor, r.n_ctx_orig)

    def attn(p, h):
        return self_attention(m, p, h, pos, rope=rope, sinks=m.w(f"{p}.attn_sinks.weight"), window=window)

    def ffn(p, h):
        return moe_ffn(h, Experts(m, p), m.n_expert_used, SOFTMAX_WEIGHT, False, m.expert_weights_scale, act="swiglu_oai", margins=m.router_margins)

    return pre_norm_block(m, il, x, attn, ffn, ffn_norm="post_attention_norm")
