"""qwen3 (src/models/qwen3.cpp): per-head RMS norm of Q and K (attn_q_norm / attn_k_norm) before NEOX rope."""
from layers import dense_ffn, pre_norm_block, self_attention


def block(m, il, x, pos):
    return pre_norm_block(m, il, x, lambda p, h: self_attention(m, p, h, pos, qk_norm=True), lambda p, h: dense_ffn(m, p, h))
