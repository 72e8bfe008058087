// Continuous batching (llama-server's): the pending steps of several sessions of one runtime run in one graph. Weight
// matmuls, norms and the FFN / experts run once over every session's rows; attention runs per session over its own
// cache cells, positions and mask (GraphBuilder::seqs). Families with a sliding window, a recurrent or compressor
// state or an indexer keep one session per graph: batch_refusal says why, and the host's batcher runs them alone.
#include <algorithm>
#include <cmath>

#include "runtime.h"

namespace neuron {

const char * batch_refusal(const SessionState & s) {
    const Model & m = *s.core->model;
    switch (m.hp.arch) {
        case Arch::Llama:
        case Arch::Qwen2:
        case Arch::Qwen3:
        case Arch::Qwen3Moe:
        case Arch::DeepSeek2: break;
        case Arch::GptOss: return "gpt-oss keeps sliding-window rings";
        case Arch::Qwen35Moe: return "qwen35moe keeps recurrent delta-net states";
        case Arch::GlmDsa: return "glm-dsa's indexer picks cells per session";
        case Arch::DeepSeek4: return "deepseek4 keeps compressor states and sliding windows";
    }
    if (!s.kv || s.kv->swa_size > 0 || s.kv->recurrent())
        return "the session's cache is not plain per-position K and V";
    return nullptr;
}

namespace {

RuntimeError batch_error(const char * code, const std::string & why) {
    return RuntimeError(code, why + "; run these sessions' steps one at a time");
}

void check_group(const std::vector<BatchItem *> & live) {
    const SessionState & a = *live.front()->session;
    const bool tokens = live.front()->req.kind == InputKind::Tokens;
    for (const BatchItem * it : live) {
        const SessionState & s = *it->session;
        if (const char * why = batch_refusal(s))
            throw batch_error("BATCH_UNSUPPORTED", std::string("cannot batch: ") + why);
        if (s.il0 != a.il0 || s.il1 != a.il1 || s.embed != a.embed || s.head != a.head ||
            (it->req.kind == InputKind::Tokens) != tokens) {
            throw batch_error("BATCH_MISMATCH", "sessions of one batch must run the same blocks [" +
                                                    std::to_string(a.il0) + ", " + std::to_string(a.il1) +
                                                    ") with the same input kind, got [" + std::to_string(s.il0) + ", " +
                                                    std::to_string(s.il1) + ")");
        }
        for (const BatchItem * other : live)
            if (other != it && other->session == it->session)
                throw batch_error("BATCH_MISMATCH", "a session appears twice in one batch");
    }
}

void run_graph(RuntimeCore & core, const std::vector<BatchItem *> & live) {
    const Model & m = *core.model;
    const SessionState & first = *live.front()->session;
    int64_t n = 0, n_outputs = 0;
    for (const BatchItem * it : live) {
        n += it->req.n_tokens;
        n_outputs += (first.head && !it->req.all_outputs) ? 1 : it->req.n_tokens;
    }
    ggml_init_params p = {ggml_tensor_overhead() * core.batch_graph_size +
                              ggml_graph_overhead_custom(core.batch_graph_size, false),
                          nullptr, true};
    ggml_context * ctx0 = ggml_init(p);
    struct CtxGuard {
        ggml_context * c;
        ~CtxGuard() { ggml_free(c); }
    } guard{ctx0};
    ggml_cgraph * gf = ggml_new_graph_custom(ctx0, core.batch_graph_size, false);
    // the single-session inputs (mask, cells) go unused: each session gets its own in add_seq
    GraphBuilder g(m, *first.kv, ctx0, gf, n, 256, 0, n_outputs, core.flash_attn, first.il0, first.il1, first.embed,
                   first.head);
    std::vector<int64_t> n_kv(live.size());
    int64_t t0 = 0;
    for (size_t i = 0; i < live.size(); ++i) {
        const SessionState & s = *live[i]->session;
        const int64_t n_end = live[i]->req.start + live[i]->req.n_tokens;
        // padded to 256 as llama.cpp does (and forward_chunk), so a session's attention reads what it reads alone
        n_kv[i] = std::min<int64_t>(s.kv->size, std::max<int64_t>(256, (n_end + 255) / 256 * 256));
        if (first.il1 > first.il0) g.add_seq(*s.kv, t0, live[i]->req.n_tokens, n_kv[i]);
        t0 += live[i]->req.n_tokens;
    }
    const InputKind kind = live.front()->req.kind;
    ggml_tensor * res = nullptr;
    switch (m.hp.arch) {
        case Arch::Llama: res = build_llama(g, kind); break;
        case Arch::Qwen2: res = build_qwen2(g, kind); break;
        case Arch::Qwen3:
        case Arch::Qwen3Moe: res = build_qwen3(g, kind); break;
        case Arch::DeepSeek2: res = build_deepseek2(g, kind); break;
        default: throw batch_error("BATCH_UNSUPPORTED", "cannot batch this family");
    }
    ggml_set_output(res);
    ggml_build_forward_expand(gf, res);
    ggml_backend_sched_reset(core.sched);
    if (!ggml_backend_sched_alloc_graph(core.sched, gf))
        throw RuntimeError("OUT_OF_MEMORY", "cannot allocate the batch's compute graph");

    auto used = [](ggml_tensor * t) { return t && t->buffer; };
    std::vector<int32_t> tokens, pos, out_ids;
    std::vector<float> hidden;
    t0 = 0;
    for (const BatchItem * it : live) {
        const ForwardRequest & r = it->req;
        tokens.insert(tokens.end(), r.tokens.begin(), r.tokens.end());
        hidden.insert(hidden.end(), r.hidden.begin(), r.hidden.end());
        for (int64_t i = 0; i < r.n_tokens; ++i) pos.push_back((int32_t) (r.start + i));
        const int64_t outs = (first.head && !r.all_outputs) ? 1 : r.n_tokens;
        for (int64_t i = r.n_tokens - outs; i < r.n_tokens; ++i) out_ids.push_back((int32_t) (t0 + i));
        t0 += r.n_tokens;
    }
    if (used(g.inp_tokens)) ggml_backend_tensor_set(g.inp_tokens, tokens.data(), 0, tokens.size() * sizeof(int32_t));
    if (used(g.inp_embd)) ggml_backend_tensor_set(g.inp_embd, hidden.data(), 0, hidden.size() * sizeof(float));
    if (used(g.inp_pos)) ggml_backend_tensor_set(g.inp_pos, pos.data(), 0, pos.size() * sizeof(int32_t));
    if (used(g.inp_out_ids))
        ggml_backend_tensor_set(g.inp_out_ids, out_ids.data(), 0, out_ids.size() * sizeof(int32_t));
    for (size_t i = 0; i < g.seqs.size(); ++i) {
        const GraphBuilder::Seq & q = g.seqs[i];
        const ForwardRequest & r = live[i]->req;
        std::vector<int64_t> cells(r.n_tokens);
        for (int64_t t = 0; t < r.n_tokens; ++t) cells[t] = r.start + t;
        if (used(q.kv_idxs)) ggml_backend_tensor_set(q.kv_idxs, cells.data(), 0, cells.size() * sizeof(int64_t));
        if (!used(q.kq_mask)) continue;
        // causal over the session's own cells: position p sees cells [0, p]
        if (core.flash_attn) {
            const ggml_fp16_t zero = ggml_fp32_to_fp16(0.0f), ninf = ggml_fp32_to_fp16(-INFINITY);
            std::vector<ggml_fp16_t> mask(q.n_kv * r.n_tokens);
            for (int64_t t = 0; t < r.n_tokens; ++t)
                for (int64_t c = 0; c < q.n_kv; ++c) mask[t * q.n_kv + c] = c <= r.start + t ? zero : ninf;
            ggml_backend_tensor_set(q.kq_mask, mask.data(), 0, mask.size() * sizeof(ggml_fp16_t));
        } else {
            std::vector<float> mask(q.n_kv * r.n_tokens);
            for (int64_t t = 0; t < r.n_tokens; ++t)
                for (int64_t c = 0; c < q.n_kv; ++c) mask[t * q.n_kv + c] = c <= r.start + t ? 0.0f : -INFINITY;
            ggml_backend_tensor_set(q.kq_mask, mask.data(), 0, mask.size() * sizeof(float));
        }
    }
    if (ggml_backend_sched_graph_compute(core.sched, gf) != GGML_STATUS_SUCCESS)
        throw RuntimeError("COMPUTE_FAILED", "ggml graph compute failed");

    const int64_t cols = res->ne[0];
    std::vector<float> all(cols * res->ne[1]);
    ggml_backend_tensor_get(res, all.data(), 0, all.size() * sizeof(float));
    int64_t row = 0;
    for (BatchItem * it : live) {
        const int64_t rows = (first.head && !it->req.all_outputs) ? 1 : it->req.n_tokens;
        ForwardResult & out = it->out;
        out.cols = cols;
        out.rows = rows;
        out.data.assign(all.begin() + row * cols, all.begin() + (row + rows) * cols);
        row += rows;
        if (it->req.f16_output) {
            out.half.resize(out.data.size());
            ggml_fp32_to_fp16_row(out.data.data(), out.half.data(), (int64_t) out.data.size());
            out.data = {};
        }
        SessionState & s = *it->session;
        s.n_past = it->req.start + it->req.n_tokens;
        s.ring_written = s.n_past;
    }
}

}  // namespace

void forward_batch(RuntimeCore & core, std::vector<BatchItem> & items) {
    std::lock_guard<std::mutex> lock(core.mu);
    std::vector<BatchItem *> live;
    for (BatchItem & it : items) {
        try {
            validate_forward(*it.session, it.req);
            live.push_back(&it);
        } catch (const RuntimeError & e) {
            it.error = std::make_unique<RuntimeError>(e);
        }
    }
    if (live.empty()) return;
    try {
        if (live.size() > MAX_BATCH_SEQS) {
            throw batch_error("BATCH_TOO_LARGE", "a batch holds at most " + std::to_string(MAX_BATCH_SEQS) +
                                                     " sessions, got " + std::to_string(live.size()))
                .num("sessions", (double) live.size())
                .num("max", (double) MAX_BATCH_SEQS);
        }
        check_group(live);
        run_graph(core, live);
    } catch (const RuntimeError & e) {
        for (BatchItem * it : live) it->error = std::make_unique<RuntimeError>(e);
    } catch (const std::exception & e) {
        for (BatchItem * it : live) it->error = std::make_unique<RuntimeError>("INTERNAL", e.what());
    }
}

}  // namespace neuron
