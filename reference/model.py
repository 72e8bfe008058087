"""A whole model (or the part the given artifacts hold): embedding, blocks, final norm and lm_head."""
import math

import torch

from families import FAMILIES
from gguf_source import ModelSource
from ops import Rope, linear, rms_norm

# llama.cpp's llama_model_rope_type: NEOX rotates halves, NORM adjacent pairs
NEOX_ARCHS = {"qwen2", "qwen3", "qwen3moe", "gpt-oss"}


class Model:
    def __init__(self, paths, f16_attention=False):
        self.src = ModelSource(paths)
        # attention as llama.cpp's CPU flash attention over an f16 KV cache computes it (ops.flash_attention_f16)
        self.f16_attention = f16_attention
        # per MoE layer and token: how far the last chosen expert's score is above the first unchosen one's
        self.router_margins = []
        self.arch = self.src.arch
        if self.arch not in FAMILIES:
            raise SystemExit(f"reference: architecture {self.arch!r} has no reference block; known: {', '.join(sorted(FAMILIES))}")
        self.family = FAMILIES[self.arch]
        hp = self.src.hp
        self.n_layer = int(hp("block_count"))
        self.n_embd = int(hp("embedding_length"))
        self.n_head = int(hp("attention.head_count"))
        self.n_head_kv = int(hp("attention.head_count_kv", self.n_head))
        self.head_k = int(hp("attention.key_length", self.n_embd // self.n_head))
        self.head_v = int(hp("attention.value_length", self.n_embd // self.n_head))
        self.n_rot = int(hp("rope.dimension_count", self.head_k))
        self.eps = float(hp("attention.layer_norm_rms_epsilon", 1e-5))
        self.n_expert = int(hp("expert_count", 0))
        self.n_expert_used = int(hp("expert_used_count", 0))
        self.expert_weights_scale = float(hp("expert_weights_scale", 0.0))
        self.rope = self._rope(self.arch in NEOX_ARCHS)
        self._cache = {}

    def _rope(self, neox):
        """Rope parameters as llama_model::load_hparams and llama_context resolve them."""
        hp = self.src.hp
        freq_base = float(hp("rope.freq_base", 10000.0))
        scaling = hp("rope.scaling.type", "linear")
        factor = float(hp("rope.scaling.factor", 0.0) or hp("rope.scale_linear", 0.0) or 0.0)
        freq_scale = 1.0 if scaling == "none" or factor == 0.0 else 1.0 / factor
        n_ctx_orig = int(hp("rope.scaling.original_context_length", hp("context_length", 4096)))
        ext_factor = 1.0 if scaling == "yarn" else 0.0
        attn_factor = 1.0
        self.yarn_log_mul = float(hp("rope.scaling.yarn_log_multiplier", 0.0))
        if self.arch == "deepseek2" and self.yarn_log_mul != 0.0:
            self.yarn_log_mul /= 0.1  # llama.cpp cancels the convert script's factor [TAG_DEEPSEEK2_YARN_LOG_MUL_FIX]
        if ext_factor != 0.0:
            f = 1.0 / freq_scale

            def get_mscale(scale, m):
                return 1.0 if scale <= 1.0 else 0.1 * m * math.log(scale) + 1.0

            if self.yarn_log_mul != 0.0:
                mscale_all = self.yarn_log_mul
                mscale = mscale_all if self.arch == "deepseek2" and mscale_all != 1.0 else 1.0
                attn_factor = get_mscale(f, mscale) / get_mscale(f, mscale_all)
            else:
                attn_factor = get_mscale(f, 1.0)
            attn_factor *= 1.0 / (1.0 + 0.1 * math.log(f))  # ggml's rope multiplies this back in
        attn_factor *= float(hp("rope.scaling.attn_factor", 1.0))
        freq_factors = self.src.optional("rope_freqs.weight")
        return Rope(self.n_rot, neox, freq_base, freq_scale, ext_factor, attn_factor, n_ctx_orig,
                    freq_factors=freq_factors)

    def has(self, name):
        return self.src.has(name)

    def w(self, name):
        t = self._cache.get(name)
        if t is None:
            t = self._cache[name] = self.src.tensor(name)
        return t

    def opt(self, name):
        return self.w(name) if self.has(name) else None

    def embed(self, tokens):
        return self.w("token_embd.weight")[torch.as_tensor(tokens, dtype=torch.long)]

    def block(self, il, x, pos):
        with torch.no_grad():
            return self.family.block(self, il, x, pos)

    def head(self, x):
        """output_norm then lm_head (token_embd.weight when there is no output.weight)."""
        h = rms_norm(x, self.w("output_norm.weight"), self.eps)
        out = self.w("output.weight") if self.has("output.weight") else self.w("token_embd.weight")
        return linear(h, out, self.opt("output.bias"))

    def run(self, tokens, on_block=None):
        """Processes the prompt in one causal batch; on_block(il, hidden) sees each block's output."""
        pos = torch.arange(len(tokens))
        with torch.no_grad():
            x = self.embed(tokens)
            for il in range(self.n_layer):
                x = self.block(il, x, pos)
                if on_block:
                    on_block(il, x)
            return self.head(x)
