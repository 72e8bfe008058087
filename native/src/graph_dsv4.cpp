// DeepSeek-V4 attention (llama.cpp src/models/deepseek4.cpp build_attention_impl, and the compressors'
// plan from src/llama-kv-cache-dsv4.cpp) over one session's caches: the sliding-window keys, the
// compressed keys (one per 4 or 128 positions), the indexer's keys, and the compressors' state rows.
#include "graph_dsv4.h"

#include <algorithm>
#include <cmath>

#include "graph.h"
#include "kv_cache.h"

namespace neuron {

namespace {

Dsv4Plan make_plan(int64_t ratio, int64_t start, int64_t n) {
    Dsv4Plan p;
    p.ratio = ratio;
    p.overlap = ratio == 4;
    p.rows = p.overlap ? 2 * ratio : ratio;
    const int64_t S = p.rows;
    // source row of position q: the zero row before position 0, this forward's row, else the state's
    auto src = [&](int64_t q) { return (int32_t) (q < 0 ? S + n : q >= start ? S + (q - start) : q % S); };
    std::vector<int32_t> prev, cur;
    for (int64_t i = 0; i < n; ++i) {
        const int64_t pos = start + i;
        p.state_pos.push_back((int32_t) (pos % ratio));
        if ((pos + 1) % ratio != 0) continue;
        const int64_t first = pos + 1 - ratio;
        p.write.push_back(pos / ratio);
        p.write_pos.push_back((int32_t) first);
        for (int64_t j = 0; j < ratio; ++j) {
            if (p.overlap) prev.push_back(src(first - ratio + j));
            (p.overlap ? cur : p.read).push_back(src(first + j));
        }
    }
    // the overlapping compressor reads every key's previous window, then every key's own
    if (p.overlap) {
        p.read = prev;
        p.read.insert(p.read.end(), cur.begin(), cur.end());
    }
    p.n_blocks = (int64_t) p.write.size();
    p.n_cells = (start + n) / ratio;
    // each state row keeps the last of this forward's positions that maps to it
    for (int64_t row = 0; row < S; ++row) {
        for (int64_t i = n - 1; i >= 0; --i) {
            if ((start + i) % S == row) {
                p.persist_src.push_back((int32_t) i);
                p.persist_dst.push_back(row);
                break;
            }
        }
    }
    return p;
}

ggml_tensor * input_1d(ggml_context * ctx, ggml_type type, int64_t n, const char * name) {
    ggml_tensor * t = ggml_new_tensor_1d(ctx, type, n);
    ggml_set_name(t, name);
    ggml_set_input(t);
    return t;
}

// llama_kv_cache::build_input_k_rot's size: the largest power of two (at least 64) dividing the head
int64_t rot_size(int64_t head) {
    int64_t n = 64;
    do n *= 2;
    while (head % n == 0);
    return n / 2;
}

ggml_tensor * hadamard(ggml_context * ctx, ggml_tensor * cur, ggml_tensor * rot) {
    if (!rot) return cur;
    const int64_t n = rot->ne[0];
    ggml_tensor * res = ggml_is_contiguous(cur) ? ggml_reshape_2d(ctx, cur, n, ggml_nelements(cur) / n)
                                                : ggml_cont_2d(ctx, cur, n, ggml_nelements(cur) / n);
    res = ggml_mul_mat(ctx, rot, res);
    ggml_mul_mat_set_hint(res, GGML_HINT_SRC0_IS_HADAMARD);
    return ggml_reshape_4d(ctx, res, cur->ne[0], cur->ne[1], cur->ne[2], cur->ne[3]);
}

// llama.cpp's dsv4_rope_attn_factor
float rope_attn_factor(float freq_scale, float ext_factor) {
    return ext_factor == 0.0f ? 1.0f : 1.0f / (1.0f + 0.1f * logf(1.0f / freq_scale));
}

// rotary embedding of the last n_rot values of each head: block-own parameters (ratio 0), or the compressors'
ggml_tensor * rope_tail(GraphBuilder & g, ggml_tensor * x, ggml_tensor * pos, bool compress, bool back = false) {
    const HParams & hp = g.hp;
    const float base = compress ? hp.dsv4.compress_rope_base : hp.freq_base;
    const float scale = compress ? hp.freq_scale : 1.0f;
    const float ext = compress ? hp.ext_factor : 0.0f;
    const float bf = compress ? hp.beta_fast : 0.0f, bs = compress ? hp.beta_slow : 0.0f;
    const int n_ctx_orig = compress ? hp.n_ctx_orig : 0;
    ggml_tensor * r = back ? ggml_rope_ext_back(g.ctx0, x, pos, nullptr, (int) hp.n_rot, hp.rope_type, n_ctx_orig, base,
                                                scale, ext, rope_attn_factor(scale, ext), bf, bs)
                           : ggml_rope_ext(g.ctx0, x, pos, nullptr, (int) hp.n_rot, hp.rope_type, n_ctx_orig, base,
                                           scale, ext, rope_attn_factor(scale, ext), bf, bs);
    return ggml_rope_set_offset(r, (int) (x->ne[0] - hp.n_rot));
}

ggml_tensor * append_row(ggml_context * ctx, ggml_tensor * t, bool neg_inf) {
    ggml_tensor * row = ggml_view_1d(ctx, t, t->ne[0], 0);
    row = neg_inf ? ggml_scale_bias(ctx, row, 0.0f, -INFINITY) : ggml_scale(ctx, row, 0.0f);
    return ggml_concat(ctx, t, ggml_reshape_2d(ctx, row, t->ne[0], 1), 1);
}

// One compressor (attention keys, or the indexer's): this forward's kv and score rows, the keys it completes
// written to `cache` (softmax-weighted over each window per channel, normed, roped at the window's start),
// then its rows kept in the state for the windows that end later.
void compress(GraphBuilder & g, Dsv4Plan & p, ggml_tensor * x, ggml_tensor * wkv, ggml_tensor * wgate,
              ggml_tensor * ape, ggml_tensor * norm, ggml_tensor * state_kv, ggml_tensor * state_score,
              ggml_tensor * cache, ggml_tensor * rot) {
    ggml_context * ctx = g.ctx0;
    ggml_tensor * kv = ggml_mul_mat(ctx, wkv, x);                       // [W, n]
    ggml_tensor * score = ggml_add(ctx, ggml_mul_mat(ctx, wgate, x), ggml_get_rows(ctx, ape, p.t_state_pos));
    const int64_t W = kv->ne[0], D = p.overlap ? W / 2 : W, r = p.ratio, nb = p.n_blocks;
    if (nb > 0) {
        ggml_tensor * src_kv = ggml_concat(ctx, state_kv, kv, 1);
        ggml_tensor * src_score = ggml_concat(ctx, state_score, score, 1);
        ggml_tensor * values;
        ggml_tensor * scores;
        if (p.overlap) {
            src_kv = append_row(ctx, src_kv, false);
            src_score = append_row(ctx, src_score, true);
            ggml_tensor * kv_rows = ggml_get_rows(ctx, src_kv, p.t_read);
            ggml_tensor * score_rows = ggml_get_rows(ctx, src_score, p.t_read);
            // the previous window's first half of the channels, this window's second half
            auto half = [&](ggml_tensor * rows, int64_t part) {
                ggml_tensor * v = ggml_view_2d(ctx, rows, D, r * nb, rows->nb[1],
                                               part * (r * nb * rows->nb[1] + ggml_row_size(rows->type, D)));
                return ggml_reshape_3d(ctx, ggml_cont(ctx, v), D, r, nb);
            };
            values = ggml_concat(ctx, half(kv_rows, 0), half(kv_rows, 1), 1);
            scores = ggml_concat(ctx, half(score_rows, 0), half(score_rows, 1), 1);
        } else {
            values = ggml_reshape_3d(ctx, ggml_get_rows(ctx, src_kv, p.t_read), D, r, nb);
            scores = ggml_reshape_3d(ctx, ggml_get_rows(ctx, src_score, p.t_read), D, r, nb);
        }
        values = ggml_cont(ctx, ggml_permute(ctx, values, 1, 0, 2, 3));
        scores = ggml_cont(ctx, ggml_permute(ctx, scores, 1, 0, 2, 3));
        ggml_tensor * comp = ggml_sum_rows(ctx, ggml_mul(ctx, values, ggml_soft_max(ctx, scores)));
        comp = ggml_cont(ctx, ggml_permute(ctx, comp, 1, 0, 2, 3));  // [D, 1, nb]
        comp = g.rms_norm(comp, norm);
        comp = hadamard(ctx, rope_tail(g, comp, p.t_write_pos, true), rot);
        ggml_build_forward_expand(g.gf, ggml_set_rows(ctx, cache, ggml_reshape_2d(ctx, comp, D, nb), p.t_write));
    }
    ggml_build_forward_expand(g.gf,
                              ggml_set_rows(ctx, state_kv, ggml_get_rows(ctx, kv, p.t_persist_src), p.t_persist_dst));
    ggml_build_forward_expand(
        g.gf, ggml_set_rows(ctx, state_score, ggml_get_rows(ctx, score, p.t_persist_src), p.t_persist_dst));
}

// [head, 1, cells] of a key cache
ggml_tensor * cache_view(ggml_context * ctx, ggml_tensor * cache, int64_t cells) {
    return ggml_view_3d(ctx, cache, cache->ne[0], 1, cells, cache->nb[1], cache->nb[1], 0);
}

// the lightning indexer: the n_top_k compressed keys each token attends to (indices into the compressed cells)
ggml_tensor * indexer_top_k(GraphBuilder & g, Dsv4Inputs & in, const Layer & L, const KvCache::Compressed & c,
                            ggml_tensor * qr, ggml_tensor * x) {
    ggml_context * ctx = g.ctx0;
    const auto & d = g.hp.dsv4;
    Dsv4Plan & p = in.r4;
    ggml_tensor * q = ggml_reshape_3d(ctx, ggml_mul_mat(ctx, L.idx_q_b, qr), d.idx_head_size, d.idx_heads, g.n_tokens);
    q = hadamard(ctx, rope_tail(g, q, g.inp_pos, true), in.idx_rot);
    ggml_tensor * w =
        ggml_scale(ctx, ggml_mul_mat(ctx, L.idx_proj, x), 1.0f / sqrtf(float(d.idx_head_size * d.idx_heads)));
    ggml_tensor * k = cache_view(ctx, c.idx_k, p.n_cells);
    // the fused indexer takes an f16 mask whether or not the attention is flash
    ggml_tensor * mask = p.t_mask->type == GGML_TYPE_F16 ? p.t_mask : ggml_cast(ctx, p.t_mask, GGML_TYPE_F16);
    ggml_tensor * score = ggml_lightning_indexer(ctx, q, k, w, mask);
    return ggml_cont(ctx, ggml_top_k(ctx, score, (int) std::min(p.n_cells, d.idx_top_k)));
}

// the compressed cells' mask with only each token's top-k left open
ggml_tensor * top_k_mask(GraphBuilder & g, ggml_tensor * mask, ggml_tensor * top_k) {
    ggml_context * ctx = g.ctx0;
    ggml_tensor * all = ggml_fill(ctx, mask, -INFINITY);
    all = ggml_view_4d(ctx, all, 1, all->ne[0], all->ne[1], all->ne[3], all->nb[0], all->nb[1], all->nb[2], 0);
    ggml_tensor * idx = ggml_view_4d(ctx, top_k, top_k->ne[0], top_k->ne[1], top_k->ne[3], 1, top_k->nb[1],
                                     top_k->nb[2], top_k->ne[3] * top_k->nb[3], 0);
    ggml_tensor * zeros =
        ggml_fill(ctx, ggml_new_tensor_4d(ctx, mask->type, 1, idx->ne[0], idx->ne[1], idx->ne[2]), 0.0f);
    ggml_tensor * open = ggml_set_rows(ctx, all, zeros, idx);
    open = ggml_view_4d(ctx, open, open->ne[1], open->ne[2], 1, open->ne[3], open->nb[2], open->nb[3], open->nb[3], 0);
    return ggml_add(ctx, open, mask);
}

// softmax attention of q over keys that are also the values, with the block's sinks
ggml_tensor * attend_keys(GraphBuilder & g, const Layer & L, ggml_tensor * q, ggml_tensor * k, ggml_tensor * mask) {
    ggml_context * ctx = g.ctx0;
    q = ggml_permute(ctx, q, 0, 2, 1, 3);
    k = ggml_permute(ctx, k, 0, 2, 1, 3);
    ggml_tensor * cur;
    if (g.flash_attn) {
        cur = ggml_flash_attn_ext(ctx, q, k, k, mask, g.hp.kq_scale, 0.0f, 0.0f);
        ggml_flash_attn_ext_add_sinks(cur, L.attn_sinks);
        ggml_flash_attn_ext_set_prec(cur, GGML_PREC_F32);
        return ggml_reshape_2d(ctx, cur, cur->ne[0] * cur->ne[1], cur->ne[2] * cur->ne[3]);
    }
    ggml_tensor * kq = ggml_mul_mat(ctx, k, q);
    ggml_mul_mat_set_prec(kq, GGML_PREC_F32);
    kq = ggml_soft_max_ext(ctx, kq, mask, g.hp.kq_scale, 0.0f);
    ggml_soft_max_add_sinks(kq, L.attn_sinks);
    ggml_tensor * kqv = ggml_mul_mat(ctx, ggml_cont(ctx, ggml_transpose(ctx, k)), kq);
    cur = ggml_permute(ctx, kqv, 0, 2, 1, 3);
    return ggml_cont_2d(ctx, cur, cur->ne[0] * cur->ne[1], cur->ne[2] * cur->ne[3]);
}

}  // namespace

Dsv4Inputs dsv4_plan(int64_t start, int64_t n) {
    Dsv4Inputs in;
    in.r4 = make_plan(4, start, n);
    in.r128 = make_plan(128, start, n);
    return in;
}

namespace {

void plan_tensors(GraphBuilder & g, Dsv4Plan & p, ggml_type mask_type) {
    ggml_context * ctx = g.ctx0;
    p.t_state_pos = input_1d(ctx, GGML_TYPE_I32, (int64_t) p.state_pos.size(), "dsv4_state_pos");
    p.t_persist_src = input_1d(ctx, GGML_TYPE_I32, (int64_t) p.persist_src.size(), "dsv4_persist_src");
    p.t_persist_dst = input_1d(ctx, GGML_TYPE_I64, (int64_t) p.persist_dst.size(), "dsv4_persist_dst");
    if (p.n_blocks > 0) {
        p.t_read = input_1d(ctx, GGML_TYPE_I32, (int64_t) p.read.size(), "dsv4_read");
        p.t_write = input_1d(ctx, GGML_TYPE_I64, p.n_blocks, "dsv4_write");
        p.t_write_pos = input_1d(ctx, GGML_TYPE_I32, p.n_blocks, "dsv4_write_pos");
    }
    if (p.n_cells > 0) {
        p.t_mask = ggml_new_tensor_2d(ctx, mask_type, p.n_cells, g.n_tokens);
        ggml_set_name(p.t_mask, "dsv4_comp_mask");
        ggml_set_input(p.t_mask);
    }
}

ggml_tensor * rot_input(GraphBuilder & g, int64_t head, const char * name) {
    const int64_t n = rot_size(head);
    ggml_tensor * t = ggml_new_tensor_2d(g.ctx0, GGML_TYPE_F32, n, n);
    ggml_set_name(t, name);
    ggml_set_input(t);
    return t;
}

}  // namespace

ggml_tensor * dsv4_attention(GraphBuilder & g, Dsv4Inputs & in, int il, ggml_tensor * x) {
    ggml_context * ctx = g.ctx0;
    const HParams & hp = g.hp;
    const Layer & L = g.model.layer(il);
    const KvCache::Compressed & c = g.kv.comp[il - g.kv.il0];
    const int64_t D = hp.n_embd_head, H = hp.n_head, n = g.n_tokens, ratio = hp.dsv4.ratio(il);
    const ggml_type mask_type = g.inp_kq_mask_swa->type;
    // inputs shared by the graph's blocks, made when a block first needs them
    if (!in.rot && D == hp.dsv4.idx_head_size) in.rot = rot_input(g, D, "dsv4_k_rot");
    if (ratio != 0 && !in.plan(ratio).t_state_pos) plan_tensors(g, in.plan(ratio), mask_type);
    if (ratio == 4 && !in.idx_rot) in.idx_rot = rot_input(g, hp.dsv4.idx_head_size, "dsv4_idx_k_rot");

    ggml_tensor * qr = g.rms_norm(ggml_mul_mat(ctx, L.wq_a, x), L.attn_q_a_norm);
    ggml_tensor * q = ggml_reshape_3d(ctx, ggml_mul_mat(ctx, L.wq_b, qr), D, H, n);
    q = rope_tail(g, ggml_rms_norm(ctx, q, hp.rms_eps), g.inp_pos, ratio != 0);
    ggml_tensor * kv = g.rms_norm(ggml_mul_mat(ctx, L.wkv, x), L.attn_kv_norm);
    kv = rope_tail(g, ggml_reshape_3d(ctx, kv, D, 1, n), g.inp_pos, ratio != 0);

    ggml_tensor * top_k = nullptr;
    if (ratio != 0) {
        Dsv4Plan & p = in.plan(ratio);
        compress(g, p, x, L.comp_wkv, L.comp_wgate, L.comp_ape, L.comp_norm, c.kv, c.score, c.k, in.rot);
        if (ratio == 4) {
            compress(g, p, x, L.idx_comp_wkv, L.idx_comp_wgate, L.idx_comp_ape, L.idx_comp_norm, c.idx_kv, c.idx_score,
                     c.idx_k, in.idx_rot);
            if (p.n_cells > 0) top_k = indexer_top_k(g, in, L, c, qr, x);
        }
    }

    q = hadamard(ctx, q, in.rot);
    kv = hadamard(ctx, kv, in.rot);
    ggml_build_forward_expand(g.gf, q);
    ggml_build_forward_expand(g.gf, kv);
    ggml_tensor * raw = g.kv.k[il - g.kv.il0];
    ggml_build_forward_expand(g.gf,
                              ggml_set_rows(ctx, raw, ggml_view_2d(ctx, kv, D, n, kv->nb[2], 0), g.inp_kv_idxs_swa));
    ggml_tensor * k = cache_view(ctx, raw, g.n_kv_swa);
    ggml_tensor * mask = g.inp_kq_mask_swa;
    if (ratio != 0 && in.plan(ratio).n_cells > 0) {
        Dsv4Plan & p = in.plan(ratio);
        k = ggml_concat(ctx, k, cache_view(ctx, c.k, p.n_cells), 2);
        mask = ggml_concat(ctx, mask, top_k ? top_k_mask(g, p.t_mask, top_k) : p.t_mask, 0);
    }
    ggml_tensor * out = hadamard(ctx, attend_keys(g, L, q, k, mask), in.rot);

    // undo the rotary embedding of the values (they are the keys), then the grouped low-rank output
    out = rope_tail(g, ggml_reshape_3d(ctx, out, D, H, n), g.inp_pos, ratio != 0, true);
    const int64_t groups = hp.dsv4.o_groups, rank = hp.dsv4.o_lora_rank;
    out = ggml_permute(ctx, ggml_reshape_3d(ctx, out, H / groups * D, groups, n), 0, 2, 1, 3);
    ggml_tensor * wo_a = ggml_reshape_3d(ctx, L.wo_a, H / groups * D, rank, groups);
    ggml_tensor * oa = ggml_permute(ctx, ggml_mul_mat(ctx, wo_a, out), 0, 2, 1, 3);
    return ggml_mul_mat(ctx, L.wo_b, ggml_cont_2d(ctx, oa, rank * groups, n));
}

namespace {

void set_plan(const Dsv4Plan & p, int64_t start, int64_t n, bool f16) {
    auto used = [](ggml_tensor * t) { return t && t->buffer; };
    auto set = [&](ggml_tensor * t, const void * data, size_t bytes) {
        if (used(t)) ggml_backend_tensor_set(t, data, 0, bytes);
    };
    set(p.t_state_pos, p.state_pos.data(), p.state_pos.size() * sizeof(int32_t));
    set(p.t_persist_src, p.persist_src.data(), p.persist_src.size() * sizeof(int32_t));
    set(p.t_persist_dst, p.persist_dst.data(), p.persist_dst.size() * sizeof(int64_t));
    set(p.t_read, p.read.data(), p.read.size() * sizeof(int32_t));
    set(p.t_write, p.write.data(), p.write.size() * sizeof(int64_t));
    set(p.t_write_pos, p.write_pos.data(), p.write_pos.size() * sizeof(int32_t));
    if (!used(p.t_mask)) return;
    std::vector<float> mask(p.n_cells * n);
    for (int64_t i = 0; i < n; ++i) {
        const int64_t visible = (start + i + 1) / p.ratio;
        for (int64_t j = 0; j < p.n_cells; ++j) mask[i * p.n_cells + j] = j < visible ? 0.0f : -INFINITY;
    }
    if (f16) {
        std::vector<ggml_fp16_t> half(mask.size());
        ggml_fp32_to_fp16_row(mask.data(), half.data(), (int64_t) mask.size());
        set(p.t_mask, half.data(), half.size() * sizeof(ggml_fp16_t));
    } else {
        set(p.t_mask, mask.data(), mask.size() * sizeof(float));
    }
}

// llama.cpp's ggml_gen_hadamard: the orthonormal Walsh-Hadamard matrix
void set_rot(ggml_tensor * t) {
    if (!t || !t->buffer) return;
    const int64_t n = t->ne[0];
    std::vector<float> h(n * n);
    h[0] = 1.0f / sqrtf((float) n);
    for (int64_t s = 1; s < n; s *= 2) {
        for (int64_t i = 0; i < s; ++i) {
            for (int64_t j = 0; j < s; ++j) {
                const float v = h[i * n + j];
                h[(i + s) * n + j] = v;
                h[i * n + j + s] = v;
                h[(i + s) * n + j + s] = -v;
            }
        }
    }
    ggml_backend_tensor_set(t, h.data(), 0, h.size() * sizeof(float));
}

}  // namespace

void dsv4_set_inputs(const GraphBuilder & g, const Dsv4Inputs & in, int64_t start, int64_t n) {
    const bool f16 = g.inp_kq_mask_swa && g.inp_kq_mask_swa->type == GGML_TYPE_F16;
    set_plan(in.r4, start, n, f16);
    set_plan(in.r128, start, n, f16);
    set_rot(in.rot);
    set_rot(in.idx_rot);
}

}  // namespace neuron
