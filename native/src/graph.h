#pragma once
// Shared pieces of every architecture's graph (llama.cpp's llm_graph_context, reduced to what
// a layer range needs): the input seam, RMS norm, RoPE, GQA attention over the session's KV
// cache, the SwiGLU FFN and the output seam (hidden states or logits).
#include <cstdint>
#include <vector>

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
    int64_t n_kv_swa;   // the same on sliding-window blocks (their ring of cells)
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
    // F16 / F32 [n_kv_swa, n_tokens], when the graph runs sliding-window blocks
    ggml_tensor * inp_kq_mask_swa = nullptr;
    ggml_tensor * inp_kv_idxs_swa = nullptr;  // I64 [n_tokens]: each token's cell in the sliding-window ring
    ggml_tensor * inp_kv_idxs = nullptr; // I64 [n_tokens]: cache cell of each token
    ggml_tensor * inp_out_ids = nullptr; // I32 [n_outputs], only when n_outputs < n_tokens
    // glm-dsa (graph_dsa.cpp): the indexer's causal mask and Hadamard rotation, the attention mask the previous
    // hop's top-k indices make (shared blocks before the range's first full block), the top-k leaving the range
    ggml_tensor * inp_kq_mask_lid = nullptr;    // F16 [n_kv, n_tokens]
    ggml_tensor * inp_k_rot = nullptr;          // F32 [indexer_head_size, indexer_head_size]
    ggml_tensor * inp_kq_mask_top_k = nullptr;  // like inp_kq_mask, -inf outside each token's top-k cells
    ggml_tensor * out_top_k = nullptr;          // I32 [min(n_kv, top_k), n_tokens], an output of the graph
    ggml_tensor * attn_mask = nullptr;          // when set, attend() masks with it instead of inp_kq_mask
    // I32 [n_tokens]: the hidden rows' token ids (deepseek4's hash-routed blocks)
    ggml_tensor * inp_token_ids = nullptr;
    struct Dsv4Inputs * dsv4 = nullptr;     // deepseek4's compressor plans (graph_dsv4.h)

    // A batch of sessions (runtime_batch.cpp): rows [t0, t0 + n) of the graph are one session's, attending over its own
    // cache with its own mask and cells; everything else runs once
    // over all rows. Empty: one session (kv and the inputs above).
    struct Seq {
        const KvCache * kv;
        int64_t t0, n, n_kv;
        ggml_tensor * kq_mask;  // like inp_kq_mask, [n_kv, n]
        ggml_tensor * kv_idxs;  // I64 [n]
    };
    std::vector<Seq> seqs;
    void add_seq(const KvCache & kv, int64_t t0, int64_t n, int64_t n_kv);

    GraphBuilder(const Model & model, const KvCache & kv, ggml_context * ctx0, ggml_cgraph * gf, int64_t n_tokens,
                 int64_t n_kv, int64_t n_kv_swa, int64_t n_outputs, bool flash_attn, int il0, int il1, bool embed,
                 bool head);

    ggml_tensor * input(InputKind kind);  // token embeddings or the previous hop's hidden states
    ggml_tensor * rms_norm(ggml_tensor * x, ggml_tensor * w) const;
    // block il's rotary embedding (sliding-window blocks may have their own base)
    ggml_tensor * rope(ggml_tensor * x, int il) const;
    // x: [n_embd, n_tokens] -> Q [head_dim, n_head, n_tokens], K and V [head_dim, n_head_kv, n_tokens]
    void qkv(const Layer & L, ggml_tensor * x, ggml_tensor *& q, ggml_tensor *& k, ggml_tensor *& v) const;
    // stores K (and V, unless the cache is MLA's key-only latent) at the tokens' cells, attends over
    // the cache (with the block's sinks; MLA decompresses V with wv_b), projects with wo (+ bias)
    ggml_tensor * attention(int il, ggml_tensor * q, ggml_tensor * k, ggml_tensor * v);
    // the same without the output projection: [n_embd_head * n_head, n_tokens]
    ggml_tensor * attend(int il, ggml_tensor * q, ggml_tensor * k, ggml_tensor * v);
    // qwen35moe's linear attention (graph_delta.cpp): gated delta-net over the session's conv and SSM state
    ggml_tensor * delta_net(int il, ggml_tensor * x);
    // qwen35moe's full attention: Q with an output gate, Q/K norms, M-RoPE, sigmoid-gated output
    ggml_tensor * gated_attention(int il, ggml_tensor * x);
    // MLA (deepseek2): low-rank Q, the compressed KV latent plus a shared rope key, absorbed into MQA
    // (qr: the normed low-rank query, when the caller has it already)
    ggml_tensor * mla_attention(int il, ggml_tensor * x, ggml_tensor * qr = nullptr);
    // glm-dsa: a full block's lightning indexer -> each token's top-k cells; the attention mask they make
    ggml_tensor * dsa_top_k(int il, ggml_tensor * x, ggml_tensor * qr);
    ggml_tensor * dsa_mask(ggml_tensor * top_k) const;
    ggml_tensor * ffn_swiglu(ggml_tensor * x, ggml_tensor * up, ggml_tensor * gate, ggml_tensor * down,
                             ggml_tensor * up_b = nullptr, ggml_tensor * gate_b = nullptr,
                             ggml_tensor * down_b = nullptr) const;
    // llama.cpp's build_moe_ffn: route each token to n_expert_used experts and sum their weighted outputs
    ggml_tensor * moe_ffn(const Layer & L, ggml_tensor * x) const;
    // the rest of block il after attention: residual, normed FFN (dense, experts, experts + shared), residual
    // (at the model's last block with a head, only the rows that become logits go on)
    ggml_tensor * ffn_residual(int il, ggml_tensor * attn_out, ggml_tensor * block_in) const;
    // after the range: hidden states for the next hop, or output norm + lm_head
    ggml_tensor * output(ggml_tensor * cur);

  private:
    // attention of rows [t0, t0 + n) over one cache (the single-session graph: all rows and kv)
      ggml_tensor * attend_seq(int il, ggml_tensor * q, ggml_tensor * k, ggml_tensor * v, const KvCache & cache,
                               int64_t t0, int64_t n, int64_t n_kv, ggml_tensor * idxs, ggml_tensor * mask);
      ggml_tensor * out_rows(ggml_tensor * x) const { return ggml_get_rows(ctx0, x, inp_out_ids); }
      // families whose last block runs every row (the logits' rows are picked in output())
      bool rows_after_blocks() const { return hp.arch == Arch::GptOss || hp.arch == Arch::Qwen35Moe; }
};

// one builder per architecture family (models/*.cpp); each returns the graph's result
ggml_tensor * build_llama(GraphBuilder & g, InputKind kind);  // also Mixtral
ggml_tensor * build_qwen2(GraphBuilder & g, InputKind kind);  // also gpt-oss: sinks, sliding windows, biased experts
ggml_tensor * build_qwen3(GraphBuilder & g, InputKind kind);  // also qwen3moe: the FFN picks experts
ggml_tensor * build_deepseek2(GraphBuilder & g, InputKind kind);
ggml_tensor * build_qwen35moe(GraphBuilder & g, InputKind kind);
ggml_tensor * build_glm_dsa(GraphBuilder & g, InputKind kind);
ggml_tensor * build_deepseek4(GraphBuilder & g, InputKind kind);

}  // namespace neuron
