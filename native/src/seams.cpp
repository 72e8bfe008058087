#include "seams.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "errors.h"

namespace neuron {

SeamShape seam_shape(const HParams & hp, int il0, int il1) {
    SeamShape s;
    s.input_width = s.output_width = hp.hidden_width();
    if (hp.arch == Arch::GlmDsa) {
        // glm-dsa.cpp's prev_top_k: a shared block reuses the top-k of the last full block before it, wherever that ran
        auto shared = [&](int il) { return il > 0 && il < hp.n_layer && !hp.is_indexer_full(il); };
        s.indices_in = shared(il0) ? hp.indexer_top_k : 0;
        s.indices_out = shared(il1) ? hp.indexer_top_k : 0;
    }
    return s;
}

void validate_seam_inputs(const SessionState & s, const ForwardRequest & req) {
    const HParams & hp = s.core->model->hp;
    const SeamShape seam = seam_shape(hp, s.il0, s.il1);
    // token ids: validate_token_ids (seam_inputs.cpp)
    const int64_t expected = req.n_tokens * seam.indices_in;
    if ((int64_t) req.indices.size() != expected) {
        throw RuntimeError("BAD_INDICES",
                           seam.indices_in == 0
                               ? "blocks [" + std::to_string(s.il0) + ", " + std::to_string(s.il1) +
                                     ") take no indices with their input"
                               : "block " + std::to_string(s.il0) + " reuses the previous hop's top-k: expected " +
                                     std::to_string(req.n_tokens) + " tokens x " + std::to_string(seam.indices_in) +
                                     " indices, got " + std::to_string(req.indices.size()))
            .num("got", (double) req.indices.size())
            .num("expected", (double) expected);
    }
    // each token's cells: -1 (none) or a position it may attend to (at most its own), and at least one of them
    // (a full block keeps min(cells, top-k) >= 1): with none, its attention would be a softmax over nothing
    for (int64_t t = 0; t < req.n_tokens && seam.indices_in > 0; ++t) {
        const int64_t pos = req.start + t;
        bool any = false;
        for (int64_t j = 0; j < seam.indices_in; ++j) {
            const int32_t v = req.indices[t * seam.indices_in + j];
            any = any || v >= 0;
            if (v < -1 || v > pos) {
                throw RuntimeError("BAD_INDICES", "index " + std::to_string(v) + " of token " + std::to_string(t) +
                                                      " (position " + std::to_string(pos) +
                                                      ") is neither -1 nor a position in [0, " + std::to_string(pos) +
                                                      "]")
                    .num("index", v)
                    .num("token", (double) t)
                    .num("position", (double) pos);
            }
        }
        if (!any) {
            throw RuntimeError("BAD_INDICES", "token " + std::to_string(t) + " (position " + std::to_string(pos) +
                                                  ") has no cell to attend to: all its indices are -1")
                .num("token", (double) t)
                .num("position", (double) pos);
        }
    }
}

namespace {

void set_mask(ggml_tensor * t, const std::vector<bool> & open) {
    if (t->type == GGML_TYPE_F16) {
        const ggml_fp16_t zero = ggml_fp32_to_fp16(0.0f), ninf = ggml_fp32_to_fp16(-INFINITY);
        std::vector<ggml_fp16_t> m(open.size());
        for (size_t i = 0; i < open.size(); ++i) m[i] = open[i] ? zero : ninf;
        ggml_backend_tensor_set(t, m.data(), 0, m.size() * sizeof(ggml_fp16_t));
    } else {
        std::vector<float> m(open.size());
        for (size_t i = 0; i < open.size(); ++i) m[i] = open[i] ? 0.0f : -INFINITY;
        ggml_backend_tensor_set(t, m.data(), 0, m.size() * sizeof(float));
    }
}

}  // namespace

void set_dsa_inputs(const GraphBuilder & g, const ForwardRequest & req) {
    auto used = [](ggml_tensor * t) { return t && t->buffer; };
    const int64_t n = g.n_tokens, cells = g.n_kv;
    if (used(g.inp_kq_mask_lid)) {
        std::vector<bool> open(cells * n);
        for (int64_t i = 0; i < n; ++i)
            for (int64_t c = 0; c <= req.start + i && c < cells; ++c) open[i * cells + c] = true;
        set_mask(g.inp_kq_mask_lid, open);
    }
    if (used(g.inp_k_rot)) {
        // llama-kv-cache.cpp's ggml_gen_hadamard: orthonormal, symmetric
        const int64_t d = g.inp_k_rot->ne[0];
        std::vector<float> h(d * d);
        h[0] = 1.0 / sqrtf((float) d);
        for (int64_t s = 1; s < d; s *= 2)
            for (int64_t i = 0; i < s; ++i)
                for (int64_t j = 0; j < s; ++j) {
                    const float v = h[i * d + j];
                    h[(i + s) * d + j] = v;
                    h[i * d + j + s] = v;
                    h[(i + s) * d + j + s] = -v;
                }
        ggml_backend_tensor_set(g.inp_k_rot, h.data(), 0, h.size() * sizeof(float));
    }
    if (used(g.inp_kq_mask_top_k)) {
        // llama.cpp's mask for a shared block: 0 at the top-k cells, + the causal mask (validated: v <= position)
        const int64_t k = g.hp.indexer_top_k;
        std::vector<bool> open(cells * n);
        for (int64_t i = 0; i < n; ++i)
            for (int64_t j = 0; j < k; ++j) {
                const int32_t v = req.indices[i * k + j];
                if (v >= 0 && v <= req.start + i && v < cells) open[i * cells + v] = true;
            }
        set_mask(g.inp_kq_mask_top_k, open);
    }
}

void read_dsa_indices(const GraphBuilder & g, const SessionState & s, const ForwardRequest & req, ForwardResult & out) {
    const SeamShape seam = seam_shape(g.hp, s.il0, s.il1);
    if (seam.indices_out == 0) return;
    if (!g.out_top_k) {
        out.indices = req.indices;  // no full block here: the indices the range came with go on
        return;
    }
    const int64_t n = g.n_tokens, n_top = g.out_top_k->ne[0], k = seam.indices_out;
    std::vector<int32_t> top(n_top * n);
    ggml_backend_tensor_get(g.out_top_k, top.data(), 0, top.size() * sizeof(int32_t));
    // cells past a token's position are masked wherever they are used: only the others cross, in one order
    out.indices.assign(n * k, -1);
    for (int64_t i = 0; i < n; ++i) {
        std::vector<int32_t> row;
        for (int64_t j = 0; j < n_top; ++j) {
            const int32_t v = top[i * n_top + j];
            if (v >= 0 && v <= req.start + i) row.push_back(v);
        }
        std::sort(row.begin(), row.end());
        std::copy(row.begin(), row.begin() + std::min<int64_t>((int64_t) row.size(), k), out.indices.begin() + i * k);
    }
}

}  // namespace neuron
