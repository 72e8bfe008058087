"""The building blocks every family shares, each written to match llama.cpp's ggml graph op for op
(src/llama-graph.cpp build_norm / build_ffn / build_attn_mha / build_moe_ffn, ggml-cpu rope)."""
import math

import torch


def rms_norm(x, weight, eps):
    """ggml_rms_norm over the last dimension, then the weight (build_norm with LLM_NORM_RMS)."""
    y = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps)
    return y if weight is None else y * weight


def linear(x, weight, bias=None):
    """ggml_mul_mat with a [n_out, n_in] weight, then an optional bias."""
    y = x @ weight.T
    return y if bias is None else y + bias


def swiglu_ffn(x, up, gate, down, up_b=None, gate_b=None, down_b=None):
    """build_ffn(LLM_FFN_SILU, LLM_FFN_PAR): down(silu(gate(x)) * up(x))."""
    return linear(torch.nn.functional.silu(linear(x, gate, gate_b)) * linear(x, up, up_b), down, down_b)


def swiglu_oai(gate, up, alpha=1.702, limit=7.0):
    """ggml_swiglu_oai: gate clamped above at limit, up clamped to [-limit, limit], and the +1 on up."""
    x = gate.clamp(max=limit)
    y = up.clamp(-limit, limit)
    return x * torch.sigmoid(alpha * x) * (y + 1.0)


class Rope:
    """ggml_rope_ext's parameters, resolved from metadata the way llama.cpp's loader and context do."""

    def __init__(self, n_rot, neox, freq_base, freq_scale=1.0, ext_factor=0.0, attn_factor=1.0,
                 n_ctx_orig=0, beta_fast=32.0, beta_slow=1.0, freq_factors=None):
        self.n_rot, self.neox = n_rot, neox
        self.freq_base, self.freq_scale = freq_base, freq_scale
        self.ext_factor, self.attn_factor = ext_factor, attn_factor
        self.n_ctx_orig, self.beta_fast, self.beta_slow = n_ctx_orig, beta_fast, beta_slow
        self.freq_factors = freq_factors

    def cos_sin(self, pos):
        """[n_tokens, n_rot / 2] cos and sin, with YaRN's ramp and magnitude scale when ext_factor != 0."""
        n = self.n_rot
        i = torch.arange(n // 2, dtype=torch.float64)
        theta_extrap = pos.to(torch.float64)[:, None] * self.freq_base ** (-2.0 * i / n)[None, :]
        if self.freq_factors is not None:
            theta_extrap = theta_extrap / self.freq_factors.to(torch.float64)[None, : n // 2]
        theta = self.freq_scale * theta_extrap
        mscale = self.attn_factor
        if self.ext_factor != 0.0:
            low, high = self._corr_dims()
            ramp = 1.0 - ((i - low) / max(0.001, high - low)).clamp(0.0, 1.0)
            mix = ramp * self.ext_factor
            theta = theta * (1 - mix) + theta_extrap * mix
            mscale *= 1.0 + 0.1 * math.log(1.0 / self.freq_scale)
        return (torch.cos(theta) * mscale).float(), (torch.sin(theta) * mscale).float()

    def _corr_dims(self):
        def corr_dim(n_rot):
            return self.n_rot * math.log(self.n_ctx_orig / (n_rot * 2 * math.pi)) / (2 * math.log(self.freq_base))

        start = math.floor(corr_dim(self.beta_fast))
        end = math.ceil(corr_dim(self.beta_slow))
        return max(0, start), min(self.n_rot - 1, end)

    def __call__(self, x, pos):
        """x [n_tokens, n_head, head_dim]: rotates the first n_rot dims; NORM rotates adjacent pairs
        (2i, 2i+1), NEOX pairs (i, i + n_rot/2)."""
        cos, sin = self.cos_sin(pos)
        cos, sin = cos[:, None, :], sin[:, None, :]
        n = self.n_rot
        rot, rest = x[..., :n], x[..., n:]
        if self.neox:
            a, b = rot[..., : n // 2], rot[..., n // 2:]
            out = torch.cat([a * cos - b * sin, a * sin + b * cos], dim=-1)
        else:
            a, b = rot[..., 0::2], rot[..., 1::2]
            out = torch.stack([a * cos - b * sin, a * sin + b * cos], dim=-1).flatten(-2)
        return torch.cat([out, rest], dim=-1)


def round_f16(x):
    """Through f16 and back (round to nearest even, as ggml's F16C conversions)."""
    return x.half().float()


def attention(q, k, v, scale, sinks=None, window=0, f16=False):
    """Causal softmax attention, as build_attn_mha: q [T, Hq, Dk], k [T, Hkv, Dk], v [T, Hkv, Dv]
    -> [T, Hq, Dv]. Query head h reads KV head h // (Hq / Hkv). `sinks` [Hq] is an extra logit per
    head in the softmax's denominator (unscaled); `window` > 0 masks keys with q_pos - k_pos >= window.
    f16: as llama.cpp's CPU flash attention over its default f16 KV cache (flash_attention_f16)."""
    if f16:
        return flash_attention_f16(q, k, v, scale, sinks, window)
    n_tokens, n_head = q.shape[0], q.shape[1]
    group = n_head // k.shape[1]
    k = k.repeat_interleave(group, dim=1)
    v = v.repeat_interleave(group, dim=1)
    scores = torch.einsum("qhd,khd->hqk", q, k) * scale
    qp = torch.arange(n_tokens)[:, None]
    kp = torch.arange(n_tokens)[None, :]
    masked = kp > qp
    if window > 0:
        masked = masked | (qp - kp >= window)
    scores = scores.masked_fill(masked[None], float("-inf"))
    if sinks is not None:
        sink = sinks[:, None, None].expand(n_head, n_tokens, 1)
        probs = torch.softmax(torch.cat([scores, sink], dim=-1), dim=-1)[..., :-1]
    else:
        probs = torch.softmax(scores, dim=-1)
    return torch.einsum("hqk,khd->qhd", probs, v)


def flash_attention_f16(q, k, v, scale, sinks=None, window=0):
    """ggml-cpu's flash attention for one query row at a time (flash_attn_ext_f16_one_chunk) as
    llama.cpp runs it over an f16 KV cache: Q, K, V rounded to f16, an online softmax in f32 and the
    weighted sum of V accumulated in f16 (the largest difference from an f32 softmax)."""
    n_tokens, n_head = q.shape[0], q.shape[1]
    group = n_head // k.shape[1]
    q16 = round_f16(q).permute(1, 0, 2)  # [H, Tq, D]
    k16 = round_f16(k).repeat_interleave(group, dim=1).permute(1, 0, 2)
    v16 = round_f16(v).repeat_interleave(group, dim=1).permute(1, 0, 2)
    s_all = torch.einsum("hqd,hkd->hqk", q16, k16) * scale
    big_m = torch.full((n_head, n_tokens, 1), float("-inf"))
    big_s = torch.zeros((n_head, n_tokens, 1))
    acc = torch.zeros((n_head, n_tokens, v.shape[-1]))
    qp = torch.arange(n_tokens)
    for ic in range(n_tokens):
        valid = (qp >= ic) & ((window <= 0) | (qp - ic < window))
        valid = valid[None, :, None]
        s = s_all[:, :, ic: ic + 1]
        new_max = s > big_m
        ms = torch.where(new_max, torch.exp(big_m - s), torch.ones_like(s))
        vs = torch.where(new_max, torch.ones_like(s), torch.exp(s - big_m))
        scaled = torch.where(new_max, round_f16(acc * ms), acc)
        updated = round_f16(scaled + v16[:, ic: ic + 1, :] * vs)
        acc = torch.where(valid, updated, acc)
        big_s = torch.where(valid, big_s * ms + vs, big_s)
        big_m = torch.where(valid & new_max, s, big_m)
    if sinks is not None:
        sk = sinks[:, None, None].expand(n_head, n_tokens, 1)
        new_max = sk > big_m
        ms = torch.where(new_max, torch.exp(big_m - sk), torch.ones_like(sk))
        vs = torch.where(new_max, torch.ones_like(sk), torch.exp(sk - big_m))
        acc = acc * ms
        big_s = big_s * ms + vs
    return (acc / big_s).permute(1, 0, 2)
