// DeepSeek-V4's tensors for one block and the head (llama_model_deepseek4::load_arch_tensors).
#include "tensors_deepseek4.h"

namespace neuron {

void deepseek4_block_wants(const HParams & hp, int il, Layer & L, std::vector<Want> & w) {
    const auto & d = hp.dsv4;
    const std::string b = "blk." + std::to_string(il) + ".";
    const int64_t E = hp.n_embd, H = hp.n_head, D = hp.n_embd_head, R = hp.n_lora_q;
    const int64_t hc_dim = d.hc * E, mix = (2 + d.hc) * d.hc;
    const int64_t X = hp.n_expert, F = hp.n_ff_exp, S = F * hp.n_expert_shared;
    w.push_back({b + "attn_norm.weight", &L.attn_norm, true, GGML_OP_MUL, {E}});
    w.push_back({b + "attn_sinks.weight", &L.attn_sinks, true, GGML_OP_SOFT_MAX, {H}});
    w.push_back({b + "attn_q_a.weight", &L.wq_a, true, GGML_OP_MUL_MAT, {E, R}});
    w.push_back({b + "attn_q_a_norm.weight", &L.attn_q_a_norm, true, GGML_OP_MUL, {R}});
    w.push_back({b + "attn_q_b.weight", &L.wq_b, true, GGML_OP_MUL_MAT, {R, H * D}});
    w.push_back({b + "attn_kv.weight", &L.wkv, true, GGML_OP_MUL_MAT, {E, D}});
    w.push_back({b + "attn_kv_a_norm.weight", &L.attn_kv_norm, true, GGML_OP_MUL, {D}});
    // the graph views it as (group width, rank, groups): kept out of the CPU's repacked buffers (as get_rows'
    // tables are), whose layout a reshaped view would misread
    w.push_back({b + "attn_output_a.weight",
                 &L.wo_a,
                 true,
                 GGML_OP_GET_ROWS,
                 {H * D / d.o_groups, d.o_lora_rank * d.o_groups}});
    w.push_back({b + "attn_output_b.weight", &L.wo_b, true, GGML_OP_MUL_MAT, {d.o_groups * d.o_lora_rank, E}});
    w.push_back({b + "hc_attn_fn.weight", &L.hc_attn_fn, true, GGML_OP_MUL_MAT, {hc_dim, mix}});
    w.push_back({b + "hc_attn_base.weight", &L.hc_attn_base, true, GGML_OP_ADD, {mix}});
    w.push_back({b + "hc_attn_scale.weight", &L.hc_attn_scale, true, GGML_OP_MUL, {3}});
    w.push_back({b + "hc_ffn_fn.weight", &L.hc_ffn_fn, true, GGML_OP_MUL_MAT, {hc_dim, mix}});
    w.push_back({b + "hc_ffn_base.weight", &L.hc_ffn_base, true, GGML_OP_ADD, {mix}});
    w.push_back({b + "hc_ffn_scale.weight", &L.hc_ffn_scale, true, GGML_OP_MUL, {3}});
    const int64_t ratio = d.ratio(il);
    if (ratio != 0) {
        // the 4x compressor overlaps two windows: twice the width
        const int64_t coff = ratio == 4 ? 2 : 1;
        w.push_back({b + "attn_compressor_kv.weight", &L.comp_wkv, true, GGML_OP_MUL_MAT, {E, coff * D}});
        w.push_back({b + "attn_compressor_gate.weight", &L.comp_wgate, true, GGML_OP_MUL_MAT, {E, coff * D}});
        w.push_back({b + "attn_compressor_ape.weight", &L.comp_ape, true, GGML_OP_GET_ROWS, {coff * D, ratio}});
        w.push_back({b + "attn_compressor_norm.weight", &L.comp_norm, true, GGML_OP_MUL, {D}});
    }
    if (ratio == 4) {
        const int64_t I = d.idx_head_size;
        w.push_back({b + "indexer.proj.weight", &L.idx_proj, true, GGML_OP_MUL_MAT, {E, d.idx_heads}});
        w.push_back({b + "indexer.attn_q_b.weight", &L.idx_q_b, true, GGML_OP_MUL_MAT, {R, d.idx_heads * I}});
        w.push_back({b + "indexer_compressor_kv.weight", &L.idx_comp_wkv, true, GGML_OP_MUL_MAT, {E, 2 * I}});
        w.push_back({b + "indexer_compressor_gate.weight", &L.idx_comp_wgate, true, GGML_OP_MUL_MAT, {E, 2 * I}});
        w.push_back({b + "indexer_compressor_ape.weight", &L.idx_comp_ape, true, GGML_OP_GET_ROWS, {2 * I, ratio}});
        w.push_back({b + "indexer_compressor_norm.weight", &L.idx_comp_norm, true, GGML_OP_MUL, {I}});
    }
    w.push_back({b + "ffn_gate_inp.weight", &L.ffn_gate_inp, true, GGML_OP_MUL_MAT, {E, X}});
    if (il < d.hash_layers) {
        // token id -> the experts it uses (i32), checked against the expert count after loading
        w.push_back(
            {b + "ffn_gate_tid2eid.weight", &L.ffn_tid2eid, true, GGML_OP_GET_ROWS, {hp.n_expert_used, hp.n_vocab}});
    } else {
        w.push_back({b + "exp_probs_b.bias", &L.ffn_exp_probs_b, true, GGML_OP_ADD, {X}});
    }
    w.push_back({b + "ffn_norm.weight", &L.ffn_norm, true, GGML_OP_MUL, {E}});
    w.push_back({b + "ffn_gate_exps.weight", &L.ffn_gate_exps, true, GGML_OP_MUL_MAT_ID, {E, F, X}});
    w.push_back({b + "ffn_up_exps.weight", &L.ffn_up_exps, true, GGML_OP_MUL_MAT_ID, {E, F, X}});
    w.push_back({b + "ffn_down_exps.weight", &L.ffn_down_exps, true, GGML_OP_MUL_MAT_ID, {F, E, X}});
    w.push_back({b + "ffn_gate_shexp.weight", &L.ffn_gate_shexp, true, GGML_OP_MUL_MAT, {E, S}});
    w.push_back({b + "ffn_up_shexp.weight", &L.ffn_up_shexp, true, GGML_OP_MUL_MAT, {E, S}});
    w.push_back({b + "ffn_down_shexp.weight", &L.ffn_down_shexp, true, GGML_OP_MUL_MAT, {S, E}});
}

void deepseek4_head_wants(const HParams & hp, Model & m, std::vector<Want> & w) {
    const int64_t hc = hp.dsv4.hc;
    w.push_back({"output_hc_fn.weight", &m.hc_head_fn, true, GGML_OP_MUL_MAT, {hc * hp.n_embd, hc}});
    w.push_back({"output_hc_base.weight", &m.hc_head_base, true, GGML_OP_ADD, {hc}});
    w.push_back({"output_hc_scale.weight", &m.hc_head_scale, true, GGML_OP_MUL, {1}});
}

std::string deepseek4_weight_problem(const Model & m) {
    // a hash table naming an expert the model lacks would make ggml abort in the expert matmul
    for (int il = m.il0; il < m.il1; ++il) {
        const ggml_tensor * t = m.layer(il).ffn_tid2eid;
        if (!t) continue;
        if (t->type != GGML_TYPE_I32)
            return "tensor " + std::string(t->name) + " is " + ggml_type_name(t->type) + ", not i32";
        if (!t->buffer || !ggml_backend_buffer_is_host(t->buffer)) continue;
        const auto * ids = (const int32_t *) t->data;
        for (int64_t i = 0; i < ggml_nelements(t); ++i) {
            if (ids[i] < 0 || ids[i] >= m.hp.n_expert) {
                return "tensor " + std::string(t->name) + " names expert " + std::to_string(ids[i]) + " of " +
                       std::to_string(m.hp.n_expert);
            }
        }
    }
    return "";
}

}  // namespace neuron
