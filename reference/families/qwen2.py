"""qwen2 (src/models/qwen2.cpp): llama's block with Q/K/V biases and NEOX rope (halves); an optional output.bias."""
from layers import dense_ffn, pre_norm_block, self_attention


def block(m, il, x, pos):
    return pre_norm_block(m, il, x, lambda p, h: self_attention(m, p, h, pos), lambda p, h: dense_ffn(m, p, h))
