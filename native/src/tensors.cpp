#include "tensors.h"

#include "tensors_deepseek4.h"

namespace neuron {

namespace {

using Ne = std::vector<int64_t>;

void attention_wants(const HParams & hp, const std::string & b, Layer & L, std::vector<Want> & w) {
    const int64_t E = hp.n_embd, H = hp.n_head;
    if (hp.is_mla()) {
        const int64_t rope = hp.n_rot, nope = hp.n_embd_head_k_mla - hp.n_rot, lora = hp.n_lora_kv;
        w.push_back({b + "attn_q_a.weight", &L.wq_a, true, GGML_OP_MUL_MAT, {E, hp.n_lora_q}});
        w.push_back({b + "attn_q_a_norm.weight", &L.attn_q_a_norm, true, GGML_OP_MUL, {hp.n_lora_q}});
        w.push_back({b + "attn_q_b.weight", &L.wq_b, true, GGML_OP_MUL_MAT, {hp.n_lora_q, H * hp.n_embd_head_k_mla}});
        w.push_back({b + "attn_kv_a_mqa.weight", &L.wkv_a_mqa, true, GGML_OP_MUL_MAT, {E, lora + rope}});
        w.push_back({b + "attn_kv_a_norm.weight", &L.attn_kv_a_norm, true, GGML_OP_MUL, {lora}});
        w.push_back({b + "attn_k_b.weight", &L.wk_b, true, GGML_OP_MUL_MAT, {nope, lora, H}});
        w.push_back({b + "attn_v_b.weight", &L.wv_b, true, GGML_OP_MUL_MAT, {lora, hp.n_embd_head_v_mla, H}});
        w.push_back({b + "attn_output.weight", &L.wo, true, GGML_OP_MUL_MAT, {H * hp.n_embd_head_v_mla, E}});
        return;
    }
    const int64_t q = hp.n_embd_q(), kv = hp.n_embd_kv();
    // as llama.cpp's create_tensor_qkv: a fused attn_qkv (with its bias, if any) or attn_q/attn_k/attn_v, whose
    // biases are each optional in every family (qwen2 and gpt-oss GGUFs carry them; one without them loads)
    const std::string fused = b + "attn_qkv.weight";
    w.push_back({fused, &L.wqkv, false, GGML_OP_MUL_MAT, {E, q + 2 * kv}});
    w.push_back({b + "attn_qkv.bias", &L.wqkv_b, false, GGML_OP_ADD, {q + 2 * kv}});
    w.push_back({b + "attn_q.weight", &L.wq, false, GGML_OP_MUL_MAT, {E, q}, fused});
    w.push_back({b + "attn_k.weight", &L.wk, false, GGML_OP_MUL_MAT, {E, kv}, fused});
    w.push_back({b + "attn_v.weight", &L.wv, false, GGML_OP_MUL_MAT, {E, kv}, fused});
    w.push_back({b + "attn_output.weight", &L.wo, true, GGML_OP_MUL_MAT, {q, E}});
    w.push_back({b + "attn_q.bias", &L.bq, false, GGML_OP_ADD, {q}});
    w.push_back({b + "attn_k.bias", &L.bk, false, GGML_OP_ADD, {kv}});
    w.push_back({b + "attn_v.bias", &L.bv, false, GGML_OP_ADD, {kv}});
    w.push_back({b + "attn_output.bias", &L.bo, hp.arch == Arch::GptOss, GGML_OP_ADD, {E}});
    if (hp.arch == Arch::Qwen3 || hp.arch == Arch::Qwen3Moe) {
        w.push_back({b + "attn_q_norm.weight", &L.q_norm, true, GGML_OP_MUL, {hp.n_embd_head}});
        w.push_back({b + "attn_k_norm.weight", &L.k_norm, true, GGML_OP_MUL, {hp.n_embd_head}});
    }
    if (hp.arch == Arch::GptOss) w.push_back({b + "attn_sinks.weight", &L.attn_sinks, true, GGML_OP_SOFT_MAX, {H}});
}

// glm-dsa's lightning indexer on full-indexer blocks (llama.cpp marks them optional, but its graph needs them there)
void indexer_wants(const HParams & hp, const std::string & b, Layer & L, std::vector<Want> & w) {
    const int64_t D = hp.indexer_head_size, H = hp.indexer_n_head;
    w.push_back({b + "indexer.k_norm.weight", &L.indexer_k_norm, false, GGML_OP_MUL, {D}});
    w.push_back({b + "indexer.k_norm.bias", &L.indexer_k_norm_b, false, GGML_OP_ADD, {D}});
    w.push_back({b + "indexer.proj.weight", &L.indexer_proj, true, GGML_OP_MUL_MAT, {hp.n_embd, H}});
    w.push_back({b + "indexer.attn_k.weight", &L.indexer_attn_k, true, GGML_OP_MUL_MAT, {hp.n_embd, D}});
    w.push_back({b + "indexer.attn_q_b.weight", &L.indexer_attn_q_b, true, GGML_OP_MUL_MAT, {hp.n_lora_q, H * D}});
}

// qwen35moe (llama_model_qwen35moe::load_arch_tensors): a delta-net block, or full attention whose Q projection
// also yields an output gate (Q and gate interleaved per head: 2 x head size per head)
void qwen35_attention_wants(const HParams & hp, int il, const std::string & b, Layer & L, std::vector<Want> & w) {
    const int64_t E = hp.n_embd;
    if (!hp.is_recurrent(il)) {
        const int64_t q = hp.n_embd_q(), kv = hp.n_embd_kv();
        w.push_back({b + "attn_q.weight", &L.wq, true, GGML_OP_MUL_MAT, {E, 2 * q}});
        w.push_back({b + "attn_k.weight", &L.wk, true, GGML_OP_MUL_MAT, {E, kv}});
        w.push_back({b + "attn_v.weight", &L.wv, true, GGML_OP_MUL_MAT, {E, kv}});
        w.push_back({b + "attn_output.weight", &L.wo, true, GGML_OP_MUL_MAT, {q, E}});
        w.push_back({b + "attn_q_norm.weight", &L.q_norm, true, GGML_OP_MUL, {hp.n_embd_head}});
        w.push_back({b + "attn_k_norm.weight", &L.k_norm, true, GGML_OP_MUL, {hp.n_embd_head}});
        return;
    }
    const int64_t key_dim = hp.ssm_d_state * hp.ssm_n_group, value_dim = hp.ssm_d_state * hp.ssm_dt_rank,
                  H_v = hp.ssm_dt_rank;
    w.push_back({b + "attn_qkv.weight", &L.wqkv, true, GGML_OP_MUL_MAT, {E, 2 * key_dim + value_dim}});
    w.push_back({b + "attn_gate.weight", &L.wqkv_gate, true, GGML_OP_MUL_MAT, {E, value_dim}});
    w.push_back(
        {b + "ssm_conv1d.weight", &L.ssm_conv1d, true, GGML_OP_SSM_CONV, {hp.ssm_d_conv, 2 * key_dim + value_dim}});
    w.push_back({b + "ssm_dt.bias", &L.ssm_dt, true, GGML_OP_ADD, {H_v}});
    w.push_back({b + "ssm_a", &L.ssm_a, true, GGML_OP_MUL, {H_v}});
    w.push_back({b + "ssm_beta.weight", &L.ssm_beta, true, GGML_OP_MUL_MAT, {E, H_v}});
    w.push_back({b + "ssm_alpha.weight", &L.ssm_alpha, true, GGML_OP_MUL_MAT, {E, H_v}});
    w.push_back({b + "ssm_norm.weight", &L.ssm_norm, true, GGML_OP_MUL, {hp.ssm_d_state}});
    w.push_back({b + "ssm_out.weight", &L.ssm_out, true, GGML_OP_MUL_MAT, {value_dim, E}});
}

void ffn_wants(const HParams & hp, int il, const std::string & b, Layer & L, std::vector<Want> & w) {
    const int64_t E = hp.n_embd;
    const bool moe = hp.n_expert > 0 && il >= hp.n_layer_dense_lead;
    if (!moe) {
        w.push_back({b + "ffn_gate.weight", &L.ffn_gate, true, GGML_OP_MUL_MAT, {E, hp.n_ff}});
        w.push_back({b + "ffn_up.weight", &L.ffn_up, true, GGML_OP_MUL_MAT, {E, hp.n_ff}});
        w.push_back({b + "ffn_down.weight", &L.ffn_down, true, GGML_OP_MUL_MAT, {hp.n_ff, E}});
        if (hp.arch == Arch::Llama) {
            // llama.cpp's llama loader takes FFN biases where a GGUF has them
            w.push_back({b + "ffn_gate.bias", &L.ffn_gate_b, false, GGML_OP_ADD, {hp.n_ff}});
            w.push_back({b + "ffn_up.bias", &L.ffn_up_b, false, GGML_OP_ADD, {hp.n_ff}});
            w.push_back({b + "ffn_down.bias", &L.ffn_down_b, false, GGML_OP_ADD, {E}});
        }
        return;
    }
    const int64_t X = hp.n_expert, F = hp.n_ff_exp;
    w.push_back({b + "ffn_gate_inp.weight", &L.ffn_gate_inp, true, GGML_OP_MUL_MAT, {E, X}});
    // as llama.cpp's create_tensor_gate_up_exps, where the family's
    // loader calls it: one fused ffn_gate_up_exps, or the two
    const bool fusable = hp.arch == Arch::DeepSeek2 || hp.arch == Arch::Qwen35Moe;
    const std::string fused = fusable ? b + "ffn_gate_up_exps.weight" : "";
    if (fusable) w.push_back({fused, &L.ffn_gate_up_exps, false, GGML_OP_MUL_MAT_ID, {E, 2 * F, X}});
    w.push_back({b + "ffn_gate_exps.weight", &L.ffn_gate_exps, !fusable, GGML_OP_MUL_MAT_ID, {E, F, X}, fused});
    w.push_back({b + "ffn_up_exps.weight", &L.ffn_up_exps, !fusable, GGML_OP_MUL_MAT_ID, {E, F, X}, fused});
    w.push_back({b + "ffn_down_exps.weight", &L.ffn_down_exps, true, GGML_OP_MUL_MAT_ID, {F, E, X}});
    if (hp.arch == Arch::GptOss) {
        w.push_back({b + "ffn_gate_inp.bias", &L.ffn_gate_inp_b, true, GGML_OP_ADD, {X}});
        w.push_back({b + "ffn_gate_exps.bias", &L.ffn_gate_exps_b, true, GGML_OP_ADD_ID, {F, X}});
        w.push_back({b + "ffn_up_exps.bias", &L.ffn_up_exps_b, true, GGML_OP_ADD_ID, {F, X}});
        w.push_back({b + "ffn_down_exps.bias", &L.ffn_down_exps_b, true, GGML_OP_ADD_ID, {E, X}});
    }
    if (hp.mla_family()) {
        const int64_t S = F * hp.n_expert_shared;
        w.push_back({b + "exp_probs_b.bias", &L.ffn_exp_probs_b, false, GGML_OP_ADD, {X}});
        w.push_back({b + "ffn_gate_shexp.weight", &L.ffn_gate_shexp, true, GGML_OP_MUL_MAT, {E, S}});
        w.push_back({b + "ffn_up_shexp.weight", &L.ffn_up_shexp, true, GGML_OP_MUL_MAT, {E, S}});
        w.push_back({b + "ffn_down_shexp.weight", &L.ffn_down_shexp, true, GGML_OP_MUL_MAT, {S, E}});
    }
    if (hp.arch == Arch::Qwen35Moe) {
        const int64_t S = hp.n_ff_shexp;
        w.push_back({b + "ffn_gate_inp_shexp.weight", &L.ffn_gate_inp_shexp, true, GGML_OP_MUL_MAT, {E}});
        w.push_back({b + "ffn_gate_shexp.weight", &L.ffn_gate_shexp, true, GGML_OP_MUL_MAT, {E, S}});
        w.push_back({b + "ffn_up_shexp.weight", &L.ffn_up_shexp, true, GGML_OP_MUL_MAT, {E, S}});
        w.push_back({b + "ffn_down_shexp.weight", &L.ffn_down_shexp, true, GGML_OP_MUL_MAT, {S, E}});
    }
}

}  // namespace

void block_wants(const HParams & hp, int il, Layer & L, std::vector<Want> & w) {
    if (hp.arch == Arch::DeepSeek4) return deepseek4_block_wants(hp, il, L, w);
    const std::string b = "blk." + std::to_string(il) + ".";
    w.push_back({b + "attn_norm.weight", &L.attn_norm, true, GGML_OP_MUL, {hp.n_embd}});
    if (hp.arch == Arch::Qwen35Moe) {
        qwen35_attention_wants(hp, il, b, L, w);
    } else {
        attention_wants(hp, b, L, w);
        if (hp.arch == Arch::GlmDsa && hp.is_indexer_full(il)) indexer_wants(hp, b, L, w);
    }
    // gpt-oss and qwen35moe name their pre-FFN norm post_attention_norm
    const char * ffn_norm =
        hp.arch == Arch::GptOss || hp.arch == Arch::Qwen35Moe ? "post_attention_norm.weight" : "ffn_norm.weight";
    w.push_back({b + ffn_norm, &L.ffn_norm, true, GGML_OP_MUL, {hp.n_embd}});
    ffn_wants(hp, il, b, L, w);
}

std::string shape_problem(const Want & want, const ggml_tensor * t) {
    // norms, biases, sinks and rope factors are f32 in every published GGUF; ggml aborts on other types there
    const bool matrix = want.op == GGML_OP_MUL_MAT || want.op == GGML_OP_MUL_MAT_ID || want.op == GGML_OP_GET_ROWS;
    if (!matrix && t->type != GGML_TYPE_F32)
        return "tensor " + want.name + " is " + ggml_type_name(t->type) + ", not f32";
    for (int d = 0; d < GGML_MAX_DIMS; ++d) {
        const int64_t expected = d < (int) want.ne.size() ? want.ne[d] : 1;
        if (t->ne[d] != expected) {
            std::string got, wanted;
            for (int i = 0; i < GGML_MAX_DIMS; ++i) {
                if (i < (int) want.ne.size()) wanted += (wanted.empty() ? "" : " x ") + std::to_string(want.ne[i]);
                if (i == 0 || t->ne[i] != 1) got += (got.empty() ? "" : " x ") + std::to_string(t->ne[i]);
            }
            return "tensor " + want.name + " is " + got + ", but the model's metadata makes it " + wanted;
        }
    }
    return "";
}

}  // namespace neuron
