#include "graph.h"

#include <algorithm>
#include <iterator>

namespace neuron {

GraphBuilder::GraphBuilder(const Model & model, const KvCache & kv, ggml_context * ctx0, ggml_cgraph * gf,
                           int64_t n_tokens, int64_t n_kv, int64_t n_kv_swa, int64_t n_outputs, bool flash_attn,
                           int il0, int il1, bool embed, bool head)
    : model(model), hp(model.hp), kv(kv), ctx0(ctx0), gf(gf), n_tokens(n_tokens), n_kv(n_kv), n_kv_swa(n_kv_swa),
      n_outputs(n_outputs), flash_attn(flash_attn), il0(il0), il1(il1), embed(embed), head(head) {
    if (n_outputs < n_tokens) {
        inp_out_ids = ggml_new_tensor_1d(ctx0, GGML_TYPE_I32, n_outputs);
        ggml_set_name(inp_out_ids, "inp_out_ids");
        ggml_set_input(inp_out_ids);
    }
    if (il1 > il0) {
        // M-RoPE takes 4 positions per token (text: p, p, p, 0), section after section
        inp_pos = ggml_new_tensor_1d(ctx0, GGML_TYPE_I32, n_tokens * hp.n_pos_per_token());
        ggml_set_name(inp_pos, "inp_pos");
        ggml_set_input(inp_pos);
        inp_kq_mask = ggml_new_tensor_2d(ctx0, flash_attn ? GGML_TYPE_F16 : GGML_TYPE_F32, n_kv, n_tokens);
        ggml_set_name(inp_kq_mask, "inp_kq_mask");
        ggml_set_input(inp_kq_mask);
        bool any_swa = false;
        for (int il = il0; il < il1; ++il) any_swa = any_swa || hp.is_swa(il);
        if (any_swa) {
            inp_kq_mask_swa = ggml_new_tensor_2d(ctx0, inp_kq_mask->type, n_kv_swa, n_tokens);
            ggml_set_name(inp_kq_mask_swa, "inp_kq_mask_swa");
            ggml_set_input(inp_kq_mask_swa);
            inp_kv_idxs_swa = ggml_new_tensor_1d(ctx0, GGML_TYPE_I64, n_tokens);
            ggml_set_name(inp_kv_idxs_swa, "inp_kv_idxs_swa");
            ggml_set_input(inp_kv_idxs_swa);
        }
        inp_kv_idxs = ggml_new_tensor_1d(ctx0, GGML_TYPE_I64, n_tokens);
        ggml_set_name(inp_kv_idxs, "inp_kv_idxs");
        ggml_set_input(inp_kv_idxs);
    }
}

ggml_tensor * GraphBuilder::input(InputKind kind) {
    if (kind == InputKind::Tokens) {
        inp_tokens = ggml_new_tensor_1d(ctx0, GGML_TYPE_I32, n_tokens);
        ggml_set_name(inp_tokens, "inp_tokens");
        ggml_set_input(inp_tokens);
        return ggml_get_rows(ctx0, model.tok_embd, inp_tokens);
    }
    // f16 from the wire is widened to f32 on the host before upload
    inp_embd = ggml_new_tensor_2d(ctx0, GGML_TYPE_F32, hp.hidden_width(), n_tokens);
    ggml_set_name(inp_embd, "inp_embd");
    ggml_set_input(inp_embd);
    bool hashed = false;
    for (int il = il0; il < il1; ++il) hashed = hashed || hp.needs_token_ids(il);
    if (hashed) {
        inp_token_ids = ggml_new_tensor_1d(ctx0, GGML_TYPE_I32, n_tokens);
        ggml_set_name(inp_token_ids, "inp_token_ids");
        ggml_set_input(inp_token_ids);
    }
    return inp_embd;
}

ggml_tensor * GraphBuilder::rms_norm(ggml_tensor * x, ggml_tensor * w) const {
    x = ggml_rms_norm(ctx0, x, hp.rms_eps);
    return w ? ggml_mul(ctx0, x, w) : x;
}

ggml_tensor * GraphBuilder::rope(ggml_tensor * x, int il) const {
    const float freq_base = hp.is_swa(il) ? hp.freq_base_swa : hp.freq_base;
    if (hp.multi_rope()) {
        int sections[4];
        std::copy(std::begin(hp.rope_sections), std::end(hp.rope_sections), sections);
        return ggml_rope_multi(ctx0, x, inp_pos, nullptr, (int) hp.n_rot, sections, hp.rope_type, hp.n_ctx_orig,
                               freq_base, hp.freq_scale, hp.ext_factor, hp.attn_factor, hp.beta_fast, hp.beta_slow);
    }
    return ggml_rope_ext(ctx0, x, inp_pos, model.rope_freqs, (int) hp.n_rot, hp.rope_type, hp.n_ctx_orig, freq_base,
                         hp.freq_scale, hp.ext_factor, hp.attn_factor, hp.beta_fast, hp.beta_slow);
}

void GraphBuilder::qkv(const Layer & L, ggml_tensor * x, ggml_tensor *& q, ggml_tensor *& k, ggml_tensor *& v) const {
    if (L.wqkv) {
        // fused, as llama.cpp's build_qkv: views of one product (Q's heads, then K's, then V's, per token)
        ggml_tensor * all = ggml_mul_mat(ctx0, L.wqkv, x);
        if (L.wqkv_b) all = ggml_add(ctx0, all, L.wqkv_b);
        const int64_t d = hp.n_embd_head, nq = hp.n_embd_q(), nkv = hp.n_embd_kv();
        const size_t row = ggml_row_size(all->type, d);
        q = ggml_view_3d(ctx0, all, d, hp.n_head, n_tokens, row, all->nb[1], 0);
        k = ggml_view_3d(ctx0, all, d, hp.n_head_kv, n_tokens, row, all->nb[1], ggml_row_size(all->type, nq));
        v = ggml_view_3d(ctx0, all, d, hp.n_head_kv, n_tokens, row, all->nb[1], ggml_row_size(all->type, nq + nkv));
        return;
    }
    q = ggml_mul_mat(ctx0, L.wq, x);
    if (L.bq) q = ggml_add(ctx0, q, L.bq);
    k = ggml_mul_mat(ctx0, L.wk, x);
    if (L.bk) k = ggml_add(ctx0, k, L.bk);
    v = ggml_mul_mat(ctx0, L.wv, x);
    if (L.bv) v = ggml_add(ctx0, v, L.bv);
    q = ggml_reshape_3d(ctx0, q, hp.n_embd_head, hp.n_head, n_tokens);
    k = ggml_reshape_3d(ctx0, k, hp.n_embd_head, hp.n_head_kv, n_tokens);
    v = ggml_reshape_3d(ctx0, v, hp.n_embd_head, hp.n_head_kv, n_tokens);
}

ggml_tensor * GraphBuilder::attention(int il, ggml_tensor * q, ggml_tensor * k, ggml_tensor * v) {
    const Layer & L = model.layer(il);
    ggml_tensor * cur = ggml_mul_mat(ctx0, L.wo, attend(il, q, k, v));
    if (L.bo) cur = ggml_add(ctx0, cur, L.bo);
    return cur;
}

void GraphBuilder::add_seq(const KvCache & cache, int64_t t0, int64_t n, int64_t n_kv_seq) {
    Seq s{&cache, t0, n, n_kv_seq, nullptr, nullptr};
    s.kq_mask = ggml_new_tensor_2d(ctx0, flash_attn ? GGML_TYPE_F16 : GGML_TYPE_F32, n_kv_seq, n);
    ggml_set_input(s.kq_mask);
    s.kv_idxs = ggml_new_tensor_1d(ctx0, GGML_TYPE_I64, n);
    ggml_set_input(s.kv_idxs);
    seqs.push_back(s);
}

ggml_tensor * GraphBuilder::attend(int il, ggml_tensor * q, ggml_tensor * k, ggml_tensor * v) {
    if (seqs.empty()) {
        const bool swa = hp.is_swa(il);
        ggml_tensor * mask = attn_mask ? attn_mask : swa ? inp_kq_mask_swa : inp_kq_mask;
        return attend_seq(il, q, k, v, kv, 0, n_tokens, swa ? n_kv_swa : n_kv, swa ? inp_kv_idxs_swa : inp_kv_idxs,
                          mask);
    }
    // each session's rows attend over its own cache; the rows are joined again for the output projection
    ggml_tensor * out = nullptr;
    for (const Seq & s : seqs) {
        ggml_tensor * cur = attend_seq(il, q, k, v, *s.kv, s.t0, s.n, s.n_kv, s.kv_idxs, s.kq_mask);
        out = out ? ggml_concat(ctx0, out, cur, 1) : cur;
    }
    return out;
}

ggml_tensor * GraphBuilder::attend_seq(int il, ggml_tensor * q, ggml_tensor * k, ggml_tensor * v, const KvCache & cache,
                                       int64_t t0, int64_t n_rows, int64_t n_kv, ggml_tensor * idxs,
                                       ggml_tensor * mask) {
    const Layer & L = model.layer(il);
    const bool mla = hp.is_mla();
    ggml_tensor * cache_k = cache.k[il - cache.il0];
    const int64_t k_values = hp.cache_k_values();
    const int64_t head_k = mla ? k_values : hp.n_embd_head;
    const int64_t n_head_kv = mla ? 1 : hp.n_head_kv;
    if (n_rows != n_tokens) {  // this session's rows of the batch
        auto rows = [&](ggml_tensor * t) {
            return ggml_view_3d(ctx0, t, t->ne[0], t->ne[1], n_rows, t->nb[1], t->nb[2], t0 * t->nb[2]);
        };
        q = rows(q);
        k = rows(k);
        v = rows(v);
    }
    const int64_t n_tokens = n_rows;

    // same insertion order as llama.cpp (q, v, k) so the scheduler sees the same graph
    ggml_build_forward_expand(gf, q);
    ggml_build_forward_expand(gf, v);
    ggml_build_forward_expand(gf, k);

    // store this batch's K (and V) at their cells
    ggml_build_forward_expand(
        gf, ggml_set_rows(ctx0, cache_k, ggml_view_2d(ctx0, k, k_values, n_tokens, k->nb[2], 0), idxs));
    ggml_tensor * kc = ggml_view_3d(ctx0, cache_k, head_k, n_head_kv, n_kv, ggml_row_size(cache_k->type, head_k),
                                    ggml_row_size(cache_k->type, k_values), 0);
    ggml_tensor * vc;
    if (mla) {
        // key-only cache: V is the latent part of each cached key
        vc = ggml_view_3d(ctx0, cache_k, hp.n_lora_kv, 1, n_kv, kc->nb[1], kc->nb[2], 0);
    } else {
        ggml_tensor * cache_v = cache.v[il - cache.il0];
        const int64_t n_embd_kv = hp.n_embd_kv();
        ggml_build_forward_expand(
            gf, ggml_set_rows(ctx0, cache_v, ggml_view_2d(ctx0, v, n_embd_kv, n_tokens, v->nb[2], 0), idxs));
        vc = ggml_view_3d(ctx0, cache_v, hp.n_embd_head, hp.n_head_kv, n_kv,
                          ggml_row_size(cache_v->type, hp.n_embd_head), ggml_row_size(cache_v->type, n_embd_kv), 0);
    }
    ggml_tensor * v_mla = mla ? L.wv_b : nullptr;

    q = ggml_permute(ctx0, q, 0, 2, 1, 3);    // [head_dim, n_tokens, n_head]
    kc = ggml_permute(ctx0, kc, 0, 2, 1, 3);  // [head_dim, n_kv, n_head_kv]
    vc = ggml_permute(ctx0, vc, 0, 2, 1, 3);

    ggml_tensor * cur;
    if (flash_attn) {
        cur = ggml_flash_attn_ext(ctx0, q, kc, vc, mask, hp.kq_scale, 0.0f, 0.0f);
        ggml_flash_attn_ext_add_sinks(cur, L.attn_sinks);
        ggml_flash_attn_ext_set_prec(cur, GGML_PREC_F32);
        if (v_mla) {
            // decompress MQA back to MHA, with n_tokens in dimension 1 (a matrix-matrix product)
            cur = ggml_permute(ctx0, cur, 0, 2, 1, 3);
            cur = ggml_mul_mat(ctx0, v_mla, cur);
            cur = ggml_cont(ctx0, ggml_permute(ctx0, cur, 0, 2, 1, 3));
        }
        cur = ggml_reshape_2d(ctx0, cur, cur->ne[0] * cur->ne[1], cur->ne[2] * cur->ne[3]);
    } else {
        ggml_tensor * kq = ggml_mul_mat(ctx0, kc, q);  // [n_kv, n_tokens, n_head]
        ggml_mul_mat_set_prec(kq, GGML_PREC_F32);
        kq = ggml_soft_max_ext(ctx0, kq, mask, hp.kq_scale, 0.0f);
        ggml_soft_max_add_sinks(kq, L.attn_sinks);
        ggml_tensor * vt = ggml_cont(ctx0, ggml_transpose(ctx0, vc));  // [n_kv, head_dim, n_head_kv]
        ggml_tensor * kqv = ggml_mul_mat(ctx0, vt, kq);                 // [head_dim, n_tokens, n_head]
        if (v_mla) kqv = ggml_mul_mat(ctx0, v_mla, kqv);
        cur = ggml_permute(ctx0, kqv, 0, 2, 1, 3);
        cur = ggml_cont_2d(ctx0, cur, cur->ne[0] * cur->ne[1], cur->ne[2] * cur->ne[3]);
    }
    ggml_build_forward_expand(gf, cur);
    return cur;
}

ggml_tensor * GraphBuilder::ffn_swiglu(ggml_tensor * x, ggml_tensor * up, ggml_tensor * gate, ggml_tensor * down,
                                       ggml_tensor * up_b, ggml_tensor * gate_b, ggml_tensor * down_b) const {
    ggml_tensor * u = ggml_mul_mat(ctx0, up, x);
    if (up_b) u = ggml_add(ctx0, u, up_b);
    ggml_tensor * g = ggml_mul_mat(ctx0, gate, x);
    if (gate_b) g = ggml_add(ctx0, g, gate_b);
    ggml_tensor * cur = ggml_mul_mat(ctx0, down, ggml_swiglu_split(ctx0, g, u));
    return down_b ? ggml_add(ctx0, cur, down_b) : cur;
}

ggml_tensor * GraphBuilder::ffn_residual(int il, ggml_tensor * attn_out, ggml_tensor * block_in) const {
    const Layer & L = model.layer(il);
    // gpt-oss (openai-moe.cpp) keeps every row through its last block and selects them in output()
    // and so does qwen35moe (its rows are selected after the output norm, unless llama.cpp serves MTP drafts)
    if (head && il == hp.n_layer - 1 && inp_out_ids && !rows_after_blocks()) {
        attn_out = out_rows(attn_out);
        block_in = out_rows(block_in);
    }
    ggml_tensor * ffn_inp = ggml_add(ctx0, attn_out, block_in);
    ggml_tensor * x = rms_norm(ffn_inp, L.ffn_norm);
    ggml_tensor * cur;
    if (!L.ffn_gate_inp) {
        cur = ffn_swiglu(x, L.ffn_up, L.ffn_gate, L.ffn_down, L.ffn_up_b, L.ffn_gate_b, L.ffn_down_b);
    } else {
        cur = moe_ffn(L, x);
        if (L.ffn_up_shexp) {
            ggml_tensor * shared = ffn_swiglu(x, L.ffn_up_shexp, L.ffn_gate_shexp, L.ffn_down_shexp);
            // qwen35moe scales the shared expert by a per-token sigmoid gate
            if (L.ffn_gate_inp_shexp)
                shared = ggml_mul(ctx0, shared, ggml_sigmoid(ctx0, ggml_mul_mat(ctx0, L.ffn_gate_inp_shexp, x)));
            cur = ggml_add(ctx0, cur, shared);
        }
    }
    return ggml_add(ctx0, cur, ffn_inp);
}

ggml_tensor * GraphBuilder::output(ggml_tensor * cur) {
    if (!head) return cur;
    // a head-only range (no blocks), and gpt-oss after its last block, select the output rows here
    if (inp_out_ids && (il1 <= il0 || rows_after_blocks())) cur = out_rows(cur);
    cur = rms_norm(cur, model.output_norm);
    cur = ggml_mul_mat(ctx0, model.output, cur);
    if (model.output_b) cur = ggml_add(ctx0, cur, model.output_b);
    return cur;
}

}  // namespace neuron
