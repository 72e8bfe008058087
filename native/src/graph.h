#pragma once
// Shared pieces of every architecture's graph (llama.cpp's llm_graph_context, reduced to what
// a layer range needs): the input seam, RMS norm, RoPE, GQA attention over the session's KV
// cache, the SwiGLU FFN and the output seam (hidden states or logits).
#include <cstdint>

#include "ggml.h"
#include "kv_cache.h"
#include "model.h"

namespace neuron {

enum class InputKind { Tokens, HiddenF32, HiddenF16 };

struct GraphBuilder {
    const Model & model;
    const HParams & hp;
    const KvCache & kv;
    ggml_context * ctx0;
    ggml_cgraph * gf;
    int64_t n_tokens;
    int64_t n_kv;       // cache cells the attention reads
    int64_t n_outputs;  // rows of the result (n_tokens, or 1 for last-position logits)
    bool flash_attn;
    // the blocks this graph runs ([il0, il1) within the model's range) and whether it embeds / has the head
    int il0;
    int il1;
    bool embed;
    bool head;

    // inputs, filled by the caller after allocation (positions, mask and cells only when the graph runs blocks)
    ggml_tensor * inp_tokens = nullptr;  // I32 [n_tokens]
    ggml_tensor * inp_embd = nullptr;    // F32 [n_embd, n_tokens]
    ggml_tensor * inp_pos = nullptr;     // I32 [n_tokens]
    ggml_tensor * inp_kq_mask = nullptr; // F16 (flash) / F32 [n_kv, n_tokens]
    ggml_tensor * inp_kv_idxs = nullptr; // I64 [n_tokens]: cache cell of each token
    ggml_tensor * inp_out_ids = nullptr; // I32 [n_outputs], only when n_outputs < n_tokens

    GraphBuilder(const Model & model, const KvCache & kv, ggml_context * ctx0, ggml_cgraph * gf, int64_t n_tokens,
                 int64_t n_kv, int64_t n_outputs, bool flash_attn, int il0, int il1, bool embed, bool head);

    ggml_tensor * input(InputKind kind);  // token embeddings or the previous hop's hidden states
    ggml_tensor * rms_norm(ggml_tensor * x, ggml_tensor * w) const;
    ggml_tensor * rope(ggml_tensor * x) const;
    // x: [n_embd, n_tokens] -> Q [head_dim, n_head, n_tokens], K and V [head_dim, n_head_kv, n_tokens]
    void qkv(const Layer & L, ggml_tensor * x, ggml_tensor *& q, ggml_tensor *& k, ggml_tensor *& v) const;
    // stores K/V at the tokens' cells, attends over the cache, projects with wo (+ bias)
    ggml_tensor * attention(int il, ggml_tensor * q, ggml_tensor * k, ggml_tensor * v);
    ggml_tensor * ffn_swiglu(const Layer & L, ggml_tensor * x) const;
    // the rest of block il after attention: residual, normed SwiGLU FFN, residual
    // (at the model's last block with a head, only the rows that become logits go on)
    ggml_tensor * ffn_residual(int il, ggml_tensor * attn_out, ggml_tensor * block_in) const;
    // after the range: hidden states for the next hop, or output norm + lm_head
    ggml_tensor * output(ggml_tensor * cur);

  private:
    ggml_tensor * out_rows(ggml_tensor * x) const { return ggml_get_rows(ctx0, x, inp_out_ids); }
};

// one builder per architecture family (models/*.cpp); each returns the graph's result
ggml_tensor * build_llama(GraphBuilder & g, InputKind kind);
ggml_tensor * build_qwen2(GraphBuilder & g, InputKind kind);
ggml_tensor * build_qwen3(GraphBuilder & g, InputKind kind);

}  // namespace neuron
