"""One module per architecture family: `block(m, il, x, pos)` maps block il's input [T, n_embd] to its output."""
from families import deepseek2, gpt_oss, llama, qwen2, qwen3, qwen3moe

FAMILIES = {
    "llama": llama,
    "qwen2": qwen2,
    "qwen3": qwen3,
    "qwen3moe": qwen3moe,
    "deepseek2": deepseek2,
    "gpt-oss": gpt_oss,
}
