#include "tensors.h"

namespace neuron {

namespace {

void attention_wants(const HParams & hp, const std::string & b, Layer & L, std::vector<Want> & w) {
    if (hp.is_mla()) {
        w.push_back({b + "attn_q_a.weight", &L.wq_a, true, GGML_OP_MUL_MAT});
        w.push_back({b + "attn_q_a_norm.weight", &L.attn_q_a_norm, true, GGML_OP_MUL});
        w.push_back({b + "attn_q_b.weight", &L.wq_b, true, GGML_OP_MUL_MAT});
        w.push_back({b + "attn_kv_a_mqa.weight", &L.wkv_a_mqa, true, GGML_OP_MUL_MAT});
        w.push_back({b + "attn_kv_a_norm.weight", &L.attn_kv_a_norm, true, GGML_OP_MUL});
        w.push_back({b + "attn_k_b.weight", &L.wk_b, true, GGML_OP_MUL_MAT});
        w.push_back({b + "attn_v_b.weight", &L.wv_b, true, GGML_OP_MUL_MAT});
        w.push_back({b + "attn_output.weight", &L.wo, true, GGML_OP_MUL_MAT});
        return;
    }
    const bool qkv_bias = hp.arch == Arch::Qwen2 || hp.arch == Arch::GptOss;
    w.push_back({b + "attn_q.weight", &L.wq, true, GGML_OP_MUL_MAT});
    w.push_back({b + "attn_k.weight", &L.wk, true, GGML_OP_MUL_MAT});
    w.push_back({b + "attn_v.weight", &L.wv, true, GGML_OP_MUL_MAT});
    w.push_back({b + "attn_output.weight", &L.wo, true, GGML_OP_MUL_MAT});
    w.push_back({b + "attn_q.bias", &L.bq, qkv_bias, GGML_OP_ADD});
    w.push_back({b + "attn_k.bias", &L.bk, qkv_bias, GGML_OP_ADD});
    w.push_back({b + "attn_v.bias", &L.bv, qkv_bias, GGML_OP_ADD});
    w.push_back({b + "attn_output.bias", &L.bo, hp.arch == Arch::GptOss, GGML_OP_ADD});
    if (hp.arch == Arch::Qwen3 || hp.arch == Arch::Qwen3Moe) {
        w.push_back({b + "attn_q_norm.weight", &L.q_norm, true, GGML_OP_MUL});
        w.push_back({b + "attn_k_norm.weight", &L.k_norm, true, GGML_OP_MUL});
    }
    if (hp.arch == Arch::GptOss) w.push_back({b + "attn_sinks.weight", &L.attn_sinks, true, GGML_OP_SOFT_MAX});
}

void ffn_wants(const HParams & hp, int il, const std::string & b, Layer & L, std::vector<Want> & w) {
    const bool moe = hp.n_expert > 0 && il >= hp.n_layer_dense_lead;
    if (!moe) {
        w.push_back({b + "ffn_gate.weight", &L.ffn_gate, true, GGML_OP_MUL_MAT});
        w.push_back({b + "ffn_up.weight", &L.ffn_up, true, GGML_OP_MUL_MAT});
        w.push_back({b + "ffn_down.weight", &L.ffn_down, true, GGML_OP_MUL_MAT});
        return;
    }
    const bool oai = hp.arch == Arch::GptOss;
    w.push_back({b + "ffn_gate_inp.weight", &L.ffn_gate_inp, true, GGML_OP_MUL_MAT});
    w.push_back({b + "ffn_gate_exps.weight", &L.ffn_gate_exps, true, GGML_OP_MUL_MAT_ID});
    w.push_back({b + "ffn_up_exps.weight", &L.ffn_up_exps, true, GGML_OP_MUL_MAT_ID});
    w.push_back({b + "ffn_down_exps.weight", &L.ffn_down_exps, true, GGML_OP_MUL_MAT_ID});
    if (oai) {
        w.push_back({b + "ffn_gate_inp.bias", &L.ffn_gate_inp_b, true, GGML_OP_ADD});
        w.push_back({b + "ffn_gate_exps.bias", &L.ffn_gate_exps_b, true, GGML_OP_ADD_ID});
        w.push_back({b + "ffn_up_exps.bias", &L.ffn_up_exps_b, true, GGML_OP_ADD_ID});
        w.push_back({b + "ffn_down_exps.bias", &L.ffn_down_exps_b, true, GGML_OP_ADD_ID});
    }
    if (hp.arch == Arch::DeepSeek2) {
        w.push_back({b + "exp_probs_b.bias", &L.ffn_exp_probs_b, false, GGML_OP_ADD});
        w.push_back({b + "ffn_gate_shexp.weight", &L.ffn_gate_shexp, true, GGML_OP_MUL_MAT});
        w.push_back({b + "ffn_up_shexp.weight", &L.ffn_up_shexp, true, GGML_OP_MUL_MAT});
        w.push_back({b + "ffn_down_shexp.weight", &L.ffn_down_shexp, true, GGML_OP_MUL_MAT});
    }
}

}  // namespace

void block_wants(const HParams & hp, int il, Layer & L, std::vector<Want> & w) {
    const std::string b = "blk." + std::to_string(il) + ".";
    w.push_back({b + "attn_norm.weight", &L.attn_norm, true, GGML_OP_MUL});
    attention_wants(hp, b, L, w);
    // gpt-oss names its pre-FFN norm post_attention_norm
    if (hp.arch == Arch::GptOss) {
        w.push_back({b + "post_attention_norm.weight", &L.ffn_norm, true, GGML_OP_MUL});
    } else {
        w.push_back({b + "ffn_norm.weight", &L.ffn_norm, true, GGML_OP_MUL});
    }
    ffn_wants(hp, il, b, L, w);
}

}  // namespace neuron
