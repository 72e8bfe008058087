"""deepseek2 (src/models/deepseek2.cpp): multi-head latent attention and experts with shared experts.

Attention (MLA, the split attn_k_b / attn_v_b form llama.cpp runs as MQA over the latent):
  q = attn_q_b(rms(attn_q_a(x))) (or attn_q(x) without q_lora), per head [nope | rope];
  attn_kv_a_mqa(x) = [kv latent (kv_lora) | k_pe (n_rot)]; the latent is RMS-normed, k_pe roped (NORM);
  Q = [attn_k_b . q_nope | rope(q_pe)], K = [latent | k_pe], V = latent (one KV head);
  out = attn_output(attn_v_b . softmax(Q K^T * kq_scale) V), kq_scale = mscale^2 / sqrt(key_length_mla),
  mscale = attn_factor * (1 + 0.1 ln(1/freq_scale)) * (1 + 0.1 yarn_log_mul ln(1/freq_scale)).
FFN: the first leading_dense_block_count blocks are dense; the others route to experts (softmax or
sigmoid by expert_gating_func, exp_probs_b biasing selection only, expert groups, expert_weights_norm,
expert_weights_scale) and add the shared experts' SwiGLU."""
import math

import torch

from layers import dense_ffn, pre_norm_block
from moe import SOFTMAX, Experts, moe_ffn
from ops import attention, linear, rms_norm, swiglu_ffn


def kq_scale(m):
    r = m.rope
    attn_factor_org = r.attn_factor * (1.0 + 0.1 * math.log(1.0 / r.freq_scale))
    mscale = attn_factor_org * (1.0 + 0.1 * m.yarn_log_mul * math.log(1.0 / r.freq_scale))
    head_k_mla = int(m.src.hp("attention.key_length_mla", m.head_k))
    return mscale * mscale / math.sqrt(head_k_mla)


def mla(m, p, h, pos):
    hp = m.src.hp
    t = h.shape[0]
    kv_lora = int(hp("attention.kv_lora_rank"))
    head_k = int(hp("attention.key_length_mla", m.head_k))
    n_rot = m.n_rot
    nope = head_k - n_rot
    if m.has(f"{p}.attn_q_a.weight"):
        q = linear(rms_norm(linear(h, m.w(f"{p}.attn_q_a.weight")), m.w(f"{p}.attn_q_a_norm.weight"), m.eps), m.w(f"{p}.attn_q_b.weight"))
    else:
        q = linear(h, m.w(f"{p}.attn_q.weight"))
    q = q.view(t, m.n_head, head_k)
    q_nope, q_pe = q[..., :nope], m.rope(q[..., nope:], pos)
    kv_pe = linear(h, m.w(f"{p}.attn_kv_a_mqa.weight"))
    latent = rms_norm(kv_pe[:, :kv_lora], m.w(f"{p}.attn_kv_a_norm.weight"), m.eps)
    k_pe = m.rope(kv_pe[:, None, kv_lora:], pos)  # [T, 1, n_rot]
    if m.has(f"{p}.attn_k_b.weight"):
        wk_b = m.w(f"{p}.attn_k_b.weight")  # [n_head, kv_lora, nope]
        wv_b = m.w(f"{p}.attn_v_b.weight")  # [n_head, head_v, kv_lora]
        q_abs = torch.einsum("hri,thi->thr", wk_b, q_nope)
        big_q = torch.cat([q_abs, q_pe], dim=-1)
        big_k = torch.cat([latent[:, None, :], k_pe], dim=-1)
        a = attention(big_q, big_k, latent[:, None, :], kq_scale(m), f16=m.f16_attention)  # [T, n_head, kv_lora]
        out = torch.einsum("hvr,thr->thv", wv_b, a)
    else:  # legacy GGUFs: one attn_kv_b decompressing the latent to per-head K_nope and V
        head_v = int(hp("attention.value_length_mla", m.head_v))
        kv = linear(latent, m.w(f"{p}.attn_kv_b.weight")).view(t, m.n_head, nope + head_v)
        k = torch.cat([kv[..., :nope], k_pe.expand(t, m.n_head, n_rot)], dim=-1)
        out = attention(torch.cat([q_nope, q_pe], dim=-1), k, kv[..., nope:], kq_scale(m), f16=m.f16_attention)
    return linear(out.reshape(t, -1), m.w(f"{p}.attn_output.weight"))


def block(m, il, x, pos):
    hp = m.src.hp

    def ffn(p, h):
        if il < int(hp("leading_dense_block_count", 0)):
            return dense_ffn(m, p, h)
        gating = int(hp("expert_gating_func", 0)) or SOFTMAX
        groups = (int(hp("expert_group_count", 0)), int(hp("expert_group_used_count", 0)))
        routed = moe_ffn(h, Experts(m, p), m.n_expert_used, gating, bool(hp("expert_weights_norm", False)), m.expert_weights_scale, groups, margins=m.router_margins)
        shared = swiglu_ffn(h, m.w(f"{p}.ffn_up_shexp.weight"), m.w(f"{p}.ffn_gate_shexp.weight"), m.w(f"{p}.ffn_down_shexp.weight"))
        return routed + shared

    return pre_norm_block(m, il, x, lambda p, h: mla(m, p, h, pos), ffn)
