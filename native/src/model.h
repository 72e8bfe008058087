#pragma once
// The weights of one layer range [il0, il1) of a model, read from GGUF artifacts.
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "ggml-backend.h"
#include "ggml.h"

namespace neuron {

// Mixtral is Llama with experts (n_expert > 0), as in llama.cpp
enum class Arch { Llama, Qwen2, Qwen3, Qwen3Moe, DeepSeek2, GptOss, Qwen35Moe, GlmDsa, DeepSeek4 };

// llama_expert_gating_func_type
enum class Gating { None = 0, Softmax = 1, Sigmoid = 2, SoftmaxWeight = 3, SqrtSoftplus = 4 };

const char * arch_name(Arch arch);

struct HParams {
    Arch arch = Arch::Llama;
    std::string arch_str;
    int64_t n_embd = 0;
    int64_t n_layer = 0;
    int64_t n_head = 0;
    int64_t n_head_kv = 0;
    int64_t n_embd_head = 0;  // per head, K and V
    int64_t n_rot = 0;
    int64_t n_ff = 0;
    int64_t n_vocab = 0;
    int64_t n_ctx_train = 0;
    float rms_eps = 1e-5f;
    int rope_type = 0;  // GGML_ROPE_TYPE_NORM (llama) or NEOX (qwen2/qwen3), as llama.cpp picks per arch
    float freq_base = 10000.0f;
    float freq_scale = 1.0f;
    int n_ctx_orig = 0;
    float ext_factor = 0.0f;
    float attn_factor = 1.0f;
    float beta_fast = 32.0f;
    float beta_slow = 1.0f;
    float kq_scale = 0.0f;

    // mixture of experts (0 experts: a dense model)
    int64_t n_expert = 0;
    int64_t n_expert_used = 0;
    int64_t n_ff_exp = 0;
    int64_t n_expert_shared = 0;
    int64_t n_layer_dense_lead = 0;  // the first blocks keep a dense FFN (deepseek2)
    int64_t n_expert_groups = 0;
    int64_t n_group_used = 0;
    bool expert_weights_norm = false;
    float expert_weights_scale = 0.0f;
    Gating gating = Gating::Softmax;

    // MLA (deepseek2): the cache holds a compressed latent of n_lora_kv + n_rot values per token, key-only
    int64_t n_lora_q = 0;
    int64_t n_lora_kv = 0;
    int64_t n_embd_head_k_mla = 0;  // nope + rope: the head size Q and K have after decompression
    int64_t n_embd_head_v_mla = 0;

    // sliding-window attention (gpt-oss): a token sees the n_swa positions up to itself on SWA blocks
    int64_t n_swa = 0;
    std::vector<bool> swa_layers;
    float freq_base_swa = 10000.0f;

    // Qwen3.5-MoE: gated delta-net linear attention on most blocks (a fixed-size conv + SSM state each),
    // full attention with gated output and interleaved M-RoPE on the rest, a sigmoid-gated shared expert
    std::vector<bool> recurrent_layers;  // per block: linear attention (delta-net)
    int64_t ssm_d_conv = 0;              // conv kernel width
    int64_t ssm_d_inner = 0;             // value width (= head_v_dim * ssm_dt_rank)
    int64_t ssm_d_state = 0;             // per-head K (and V) size
    int64_t ssm_dt_rank = 0;             // value heads
    int64_t ssm_n_group = 0;             // key heads
    int64_t n_ff_shexp = 0;
    int rope_sections[4] = {0, 0, 0, 0};

    // glm-dsa: deepseek2's MLA plus a lightning indexer; "full" blocks score the cached indexer keys and keep each
    // token's top-k cells, "shared" blocks attend to the top-k of the last full block before them
    std::vector<bool> indexer_full;  // per block
    int64_t indexer_n_head = 0;
    int64_t indexer_head_size = 0;
    int64_t indexer_top_k = 0;

    bool is_mla() const { return n_lora_kv > 0; }
    // deepseek2's MLA, routing and shared experts (glm-dsa builds on them)
    bool mla_family() const { return arch == Arch::DeepSeek2 || arch == Arch::GlmDsa; }
    bool is_indexer_full(int il) const { return il >= 0 && il < (int) indexer_full.size() && indexer_full[il]; }
    // DeepSeek-V4 (hparams_deepseek4.cpp): hyper-connection streams, compressed caches, hash routing
    struct Dsv4 {
        int64_t hc = 0;              // hyper-connection streams (hidden state of hc x n_embd per token)
        int64_t sinkhorn_iters = 0;
        float hc_eps = 0.0f;
        int64_t hash_layers = 0;     // the first blocks pick experts by token id
        std::vector<int64_t> ratios; // per block: 0 (window only), 4 (compressed + indexer) or 128
        float compress_rope_base = 0.0f;
        int64_t o_groups = 0;
        int64_t o_lora_rank = 0;
        int64_t idx_heads = 0;
        int64_t idx_head_size = 0;
        int64_t idx_top_k = 0;
        std::vector<float> clamp_exp;    // per block swiglu limit of the routed experts (0: none)
        std::vector<float> clamp_shexp;  // ... and of the shared expert
        int64_t ratio(int il) const { return il >= 0 && il < (int64_t) ratios.size() ? ratios[il] : 0; }
    } dsv4;

    bool is_dsv4() const { return arch == Arch::DeepSeek4; }
    // values per token of a hidden state between blocks (deepseek4 carries hc streams)
    int64_t hidden_width() const { return is_dsv4() ? dsv4.hc * n_embd : n_embd; }
    // block il needs the tokens' ids (deepseek4's hash-routed blocks)
    bool needs_token_ids(int il) const { return is_dsv4() && il < dsv4.hash_layers; }
    bool is_recurrent(int il) const { return il >= 0 && il < (int) recurrent_layers.size() && recurrent_layers[il]; }
    bool multi_rope() const { return rope_type == GGML_ROPE_TYPE_MROPE || rope_type == GGML_ROPE_TYPE_IMROPE; }
    int64_t n_pos_per_token() const { return multi_rope() ? 4 : 1; }
    int64_t ssm_conv_channels() const { return ssm_d_inner + 2 * ssm_n_group * ssm_d_state; }
    // llama_hparams::n_embd_r / n_embd_s: f32 values of a delta-net block's conv and SSM state
    int64_t n_embd_r() const { return (ssm_d_conv - 1) * ssm_conv_channels(); }
    int64_t n_embd_s() const { return ssm_d_state * ssm_d_inner; }
    bool is_swa(int il) const { return n_swa > 0 && il < (int) swa_layers.size() && swa_layers[il]; }
    int64_t n_embd_q() const { return n_embd_head * n_head; }
    int64_t n_embd_kv() const { return n_embd_head * n_head_kv; }
    // values one token adds to block il's cache: K (and V, when the cache keeps it)
    int64_t cache_k_values() const { return is_mla() ? n_lora_kv + n_rot : n_embd_kv(); }
    int64_t cache_v_values() const { return is_mla() || is_dsv4() ? 0 : n_embd_kv(); }
};

struct Layer {
    ggml_tensor * attn_norm = nullptr;
    ggml_tensor * wq = nullptr;
    ggml_tensor * wk = nullptr;
    ggml_tensor * wv = nullptr;
    ggml_tensor * wo = nullptr;
    ggml_tensor * bq = nullptr;
    ggml_tensor * bk = nullptr;
    ggml_tensor * bv = nullptr;
    ggml_tensor * bo = nullptr;
    ggml_tensor * q_norm = nullptr;
    ggml_tensor * k_norm = nullptr;
    ggml_tensor * ffn_norm = nullptr;
    ggml_tensor * ffn_gate = nullptr;
    ggml_tensor * ffn_up = nullptr;
    ggml_tensor * ffn_down = nullptr;
    // biases llama.cpp loads where a GGUF has them (llama: ffn_gate_b/ffn_up_b/ffn_down_b; TENSOR_NOT_REQUIRED)
    ggml_tensor * ffn_gate_b = nullptr;
    ggml_tensor * ffn_up_b = nullptr;
    ggml_tensor * ffn_down_b = nullptr;
    // fused Q, K and V (create_tensor_qkv accepts attn_qkv instead of attn_q/attn_k/attn_v), and its bias
    ggml_tensor * wqkv_b = nullptr;
    // gpt-oss
    ggml_tensor * attn_post_norm = nullptr;
    ggml_tensor * attn_sinks = nullptr;
    // MoE: router (+ bias, selection bias) and the stacked experts (+ per-expert biases)
    ggml_tensor * ffn_gate_inp = nullptr;
    ggml_tensor * ffn_gate_inp_b = nullptr;
    ggml_tensor * ffn_exp_probs_b = nullptr;
    ggml_tensor * ffn_gate_exps = nullptr;
    ggml_tensor * ffn_up_exps = nullptr;
    // gate and up in one tensor (create_tensor_gate_up_exps accepts it in deepseek2 and qwen35moe), gate's rows first
    ggml_tensor * ffn_gate_up_exps = nullptr;
    ggml_tensor * ffn_down_exps = nullptr;
    ggml_tensor * ffn_gate_exps_b = nullptr;
    ggml_tensor * ffn_up_exps_b = nullptr;
    ggml_tensor * ffn_down_exps_b = nullptr;
    ggml_tensor * ffn_gate_shexp = nullptr;
    ggml_tensor * ffn_up_shexp = nullptr;
    ggml_tensor * ffn_down_shexp = nullptr;
    // MLA
    ggml_tensor * wq_a = nullptr;
    ggml_tensor * wq_b = nullptr;
    ggml_tensor * attn_q_a_norm = nullptr;
    ggml_tensor * wkv_a_mqa = nullptr;
    ggml_tensor * attn_kv_a_norm = nullptr;
    ggml_tensor * wk_b = nullptr;
    ggml_tensor * wv_b = nullptr;
    // qwen35moe: delta-net (fused QKV, output gate, conv, decay, beta, gated norm, out) and the shared expert's gate
    ggml_tensor * wqkv = nullptr;
    ggml_tensor * wqkv_gate = nullptr;
    ggml_tensor * ssm_conv1d = nullptr;
    ggml_tensor * ssm_dt = nullptr;
    ggml_tensor * ssm_a = nullptr;
    ggml_tensor * ssm_beta = nullptr;
    ggml_tensor * ssm_alpha = nullptr;
    ggml_tensor * ssm_norm = nullptr;
    ggml_tensor * ssm_out = nullptr;
    ggml_tensor * ffn_gate_inp_shexp = nullptr;
    // glm-dsa's lightning indexer (full-indexer blocks only)
    ggml_tensor * indexer_k_norm = nullptr;
    ggml_tensor * indexer_k_norm_b = nullptr;
    ggml_tensor * indexer_proj = nullptr;
    ggml_tensor * indexer_attn_k = nullptr;
    ggml_tensor * indexer_attn_q_b = nullptr;
    // deepseek4: single key-value head with its norm, grouped low-rank output, hyper-connection mixes,
    // the compressors (kv, gate, positional bias, norm) and the lightning indexer, hash-routing table
    ggml_tensor * wkv = nullptr;
    ggml_tensor * attn_kv_norm = nullptr;
    ggml_tensor * wo_a = nullptr;
    ggml_tensor * wo_b = nullptr;
    ggml_tensor * hc_attn_fn = nullptr;
    ggml_tensor * hc_attn_base = nullptr;
    ggml_tensor * hc_attn_scale = nullptr;
    ggml_tensor * hc_ffn_fn = nullptr;
    ggml_tensor * hc_ffn_base = nullptr;
    ggml_tensor * hc_ffn_scale = nullptr;
    ggml_tensor * comp_wkv = nullptr;
    ggml_tensor * comp_wgate = nullptr;
    ggml_tensor * comp_ape = nullptr;
    ggml_tensor * comp_norm = nullptr;
    ggml_tensor * idx_proj = nullptr;
    ggml_tensor * idx_q_b = nullptr;
    ggml_tensor * idx_comp_wkv = nullptr;
    ggml_tensor * idx_comp_wgate = nullptr;
    ggml_tensor * idx_comp_ape = nullptr;
    ggml_tensor * idx_comp_norm = nullptr;
    ggml_tensor * ffn_tid2eid = nullptr;
};

struct LoadOptions {
    std::vector<std::string> artifacts;
    int il0 = 0;
    int il1 = 0;
    bool embed = false;
    bool head = false;
    ggml_backend_dev_t device = nullptr;
    // weights on the plain CPU buffer point into the artifact
    // files (one copy: the page cache's) instead of being read in
    bool mmap = true;
    // those weights in 2 MB pages where the kernel can (huge_pages.cpp)
    bool huge_pages = true;
};

// A read-only shared mapping of one artifact file, unmapped on destruction.
struct FileMapping {
    void * addr = nullptr;
    size_t size = 0;
    FileMapping(void * a, size_t n) : addr(a), size(n) {}
    FileMapping(const FileMapping &) = delete;
    FileMapping & operator=(const FileMapping &) = delete;
    ~FileMapping();
};

struct Model {
    HParams hp;
    int il0 = 0;
    int il1 = 0;
    bool embed = false;
    bool head = false;

    ggml_tensor * tok_embd = nullptr;
    ggml_tensor * output_norm = nullptr;
    ggml_tensor * output = nullptr;  // token_embd.weight when the embeddings are tied
    ggml_tensor * output_b = nullptr;
    ggml_tensor * rope_freqs = nullptr;
    ggml_tensor * hc_head_fn = nullptr;  // deepseek4: the hyper-connection streams' collapse before the head
    ggml_tensor * hc_head_base = nullptr;
    ggml_tensor * hc_head_scale = nullptr;
    std::vector<Layer> layers;  // layers[il - il0]

    std::vector<ggml_context *> ctxs;
    std::vector<ggml_backend_buffer_t> buffers;
    // destroyed after ~Model's body has freed the buffers that point into them
    std::vector<std::unique_ptr<FileMapping>> mappings;
    size_t weight_bytes = 0;
    size_t mapped_bytes = 0;  // weights used in place from the mapped artifacts (part of weight_bytes)
    size_t huge_page_bytes = 0;  // of the mapped spans and the CPU weight buffers, in 2 MB pages (huge_pages.cpp)
    // buffer type name -> bytes (CPU_REPACK = repacked for faster matmul)
    std::vector<std::pair<std::string, size_t>> weight_buffers;

    const Layer & layer(int il) const { return layers[il - il0]; }

    Model() = default;
    Model(const Model &) = delete;
    Model & operator=(const Model &) = delete;
    ~Model();
};

std::unique_ptr<Model> load_model(const LoadOptions & opts);

}  // namespace neuron
