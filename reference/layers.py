"""The pieces of a pre-norm transformer block the families share (llama.cpp's build_qkv, build_attn,
build_ffn and the residual adds around them)."""
import math

from ops import attention, linear, rms_norm, swiglu_ffn


def qkv(m, p, h):
    """Q [T, n_head, head_k], K and V [T, n_head_kv, head_*] from attn_qkv or attn_q/k/v, biases if present."""
    nq, nk = m.n_head * m.head_k, m.n_head_kv * m.head_k
    if m.has(f"{p}.attn_qkv.weight"):
        fused = linear(h, m.w(f"{p}.attn_qkv.weight"), m.opt(f"{p}.attn_qkv.bias"))
        q, k, v = fused[:, :nq], fused[:, nq: nq + nk], fused[:, nq + nk:]
    else:
        q = linear(h, m.w(f"{p}.attn_q.weight"), m.opt(f"{p}.attn_q.bias"))
        k = linear(h, m.w(f"{p}.attn_k.weight"), m.opt(f"{p}.attn_k.bias"))
        v = linear(h, m.w(f"{p}.attn_v.weight"), m.opt(f"{p}.attn_v.bias"))
    t = h.shape[0]
    return q.view(t, m.n_head, m.head_k), k.view(t, m.n_head_kv, m.head_k), v.reshape(t, m.n_head_kv, m.head_v)


def self_attention(m, p, h, pos, qk_norm=False, rope=None, sinks=None, window=0):
    """Attention with output projection. qk_norm: per-head RMS norm of Q and K before rope (qwen3)."""
    q, k, v = qkv(m, p, h)
    if qk_norm:
        q = rms_norm(q, m.w(f"{p}.attn_q_norm.weight"), m.eps)
        k = rms_norm(k, m.w(f"{p}.attn_k_norm.weight"), m.eps)
    rope = rope or m.rope
    q, k = rope(q, pos), rope(k, pos)
    a = attention(q, k, v, 1.0 / math.sqrt(m.head_k), sinks=sinks, window=window, f16=m.f16_attention)
    return linear(a.reshape(h.shape[0], -1), m.w(f"{p}.attn_output.weight"), m.opt(f"{p}.attn_output.bias"))


def dense_ffn(m, p, h):
    return swiglu_ffn(
        h,
        m.w(f"{p}.ffn_up.weight"),
        m.w(f"{p}.ffn_gate.weight"),
        m.w(f"{p}.ffn_down.weight"),
        m.opt(f"{p}.ffn_up.bias"),
        m.opt(f"{p}.ffn_gate.bias"),
        m.opt(f"{p}.ffn_down.bias"),
    )


def pre_norm_block(m, il, x, attn, ffn, ffn_norm="ffn_norm"):
    """x + attn(norm(x)), then + ffn(norm(.)): the residual stream every family here uses."""
    p = f"blk.{il}"
    x = x + attn(p, rms_norm(x, m.w(f"{p}.attn_norm.weight"), m.eps))
    return x + ffn(p, rms_norm(x, m.w(f"{p}.{ffn_norm}.weight"), m.eps))
