#include "runtime.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "backend.h"
#include "errors.h"
#include "seams.h"
#include "graph_dsv4.h"

namespace neuron {

std::shared_ptr<RuntimeCore> RuntimeCore::load(const RuntimeOptions & opts) {
    auto core = std::make_shared<RuntimeCore>();
    core->dev = pick_device(opts.device);
    if (!core->dev) throw RuntimeError("NO_BACKEND", "no ggml device available");
    LoadOptions lo = opts.load;
    lo.device = core->dev;
    core->model = load_model(lo);
    core->threads = std::max(1, opts.threads);
    core->flash_attn = opts.flash_attn;

    core->backend = ggml_backend_dev_init(core->dev, nullptr);
    if (!core->backend)
        throw RuntimeError("NO_BACKEND", std::string("cannot start device ") + ggml_backend_dev_name(core->dev));
    std::vector<ggml_backend_t> backends = {core->backend};
    if (ggml_backend_dev_type(core->dev) == GGML_BACKEND_DEVICE_TYPE_CPU) {
        core->cpu = core->backend;
    } else {
        core->cpu = ggml_backend_dev_init(ggml_backend_dev_by_type(GGML_BACKEND_DEVICE_TYPE_CPU), nullptr);
        backends.push_back(core->cpu);
    }
    set_n_threads(core->cpu, core->threads);
    // NEURON_NO_THREADPOOL=1: ggml's threads started per graph (node-llama-cpp's way), for a baseline
    const char * no_pool = getenv("NEURON_NO_THREADPOOL");
    if (!(no_pool && std::string(no_pool) == "1")) core->threadpool = attach_cpu_threadpool(core->cpu, core->threads);

    const int n_layers = core->model->il1 - core->model->il0;
    // nodes per block: ~95 for a deepseek2 MoE block with 8 experts (MLA, group routing, one view and add per expert)
    // (a delta-net block adds ~40: projections, conv state, the fused delta-net, gated norm)
    const size_t per_block =
        128 + 2 * (size_t) std::max<int64_t>(0, core->model->hp.n_expert_used) +
        (core->model->hp.recurrent_layers.empty() && core->model->hp.arch != Arch::GlmDsa ? 0 : 64) +
        (core->model->hp.is_dsv4() ? 384 : 0);
    core->graph_size = std::max<size_t>(1024, (size_t) n_layers * per_block + 256);
    // a batch adds per block and session: its rows' views, cache stores and views, mask, attention, the join
    core->batch_graph_size = core->graph_size + (size_t) n_layers * MAX_BATCH_SEQS * 32;
    core->sched =
        ggml_backend_sched_new(backends.data(), nullptr, (int) backends.size(), core->batch_graph_size, false, true);
    if (!core->sched) throw RuntimeError("NO_BACKEND", "cannot create the ggml scheduler");
    return core;
}

void RuntimeCore::dispose() {
    disposed = true;
    if (in_flight == 0) release();
}

void RuntimeCore::release() {
    std::lock_guard<std::mutex> lock(mu);
    if (sched) ggml_backend_sched_free(sched);
    sched = nullptr;
    model.reset();
    if (cpu && cpu != backend) ggml_backend_free(cpu);
    if (backend) ggml_backend_free(backend);
    backend = cpu = nullptr;
    free_cpu_threadpool(threadpool);
    threadpool = nullptr;
}

RuntimeCore::~RuntimeCore() { release(); }

std::shared_ptr<SessionState> open_session(const std::shared_ptr<RuntimeCore> & core, int64_t max_tokens,
                                           const std::pair<int64_t, int64_t> * blocks) {
    // JS thread only, like dispose(): no lock needed to read the
    // model, so a long forward pass elsewhere does not block it
    if (core->disposed) throw RuntimeError("RUNTIME_DISPOSED", "the runtime was disposed");
    if (max_tokens <= 0) {
        throw RuntimeError("BAD_OPTIONS", "maxTokens must be positive, got " + std::to_string(max_tokens))
            .num("maxTokens", (double) max_tokens);
    }
    const Model & m = *core->model;
    int64_t from = m.il0, to = m.il1;
    if (blocks) {
        from = blocks->first;
        to = blocks->second;
        if (!(m.il0 <= from && from < to && to <= m.il1)) {
            throw RuntimeError("BAD_RANGE", "session blocks [" + std::to_string(from) + ", " + std::to_string(to) +
                                                ") must be a non-empty sub-range of the runtime's blocks [" +
                                                std::to_string(m.il0) + ", " + std::to_string(m.il1) + ")")
                .num("from", (double) from)
                .num("to", (double) to)
                .num("runtimeFrom", m.il0)
                .num("runtimeTo", m.il1);
        }
    }
    auto s = std::make_shared<SessionState>();
    s->core = core;
    s->max_tokens = max_tokens;
    s->il0 = (int) from;
    s->il1 = (int) to;
    s->embed = m.embed && from == 0;
    s->head = m.head && to == m.hp.n_layer;
    // the cache holds only the session's blocks, not the runtime's whole range
    s->kv = make_kv_cache(m, s->il0, s->il1, max_tokens, GGML_TYPE_F16, ggml_backend_dev_buffer_type(core->dev));
    return s;
}

namespace {

// The sliding-window rings (if any) still hold the window before `start`.
bool ring_allows(const SessionState & s, int64_t start) {
    const KvCache & kv = *s.kv;
    return !kv.ring() || start == 0 || start >= s.ring_written - (kv.swa_size - s.core->model->hp.n_swa);
}

}  // namespace

void check_rollback(const SessionState & s, int64_t to, bool truncating) {
    const KvCache * kv = s.kv.get();
    if (!kv) return;
    const char * at = truncating ? "to" : "position";
    if (!ring_allows(s, to)) {
        throw RuntimeError("SWA_ROLLBACK", "sliding-window blocks keep the last " + std::to_string(kv->swa_size) +
                                               " positions; " + (truncating ? "truncating" : "rolling back") +
                                               " from " + std::to_string(s.ring_written) + " to " + std::to_string(to) +
                                               " is too far: replay the session from position 0")
            .num(at, (double) to)
            .num("nPast", (double) s.ring_written)
            .num("ringCells", (double) kv->swa_size);
    }
    // a recurrent state holds the whole past in fixed space: it can go on, or start over, but not go back
    if (kv->recurrent() && to != 0 && to != s.n_past) {
        throw RuntimeError("RECURRENT_ROLLBACK",
                           std::string(kv->comp.empty() ? "linear-attention blocks keep a recurrent state"
                                                        : "compressed-attention blocks keep a compressor state") +
                               " that cannot be rolled back; " + (truncating ? "truncating" : "starting a forward") +
                               " at " + std::to_string(to) + " of " + std::to_string(s.n_past) +
                               " positions: replay the session from position 0")
            .num(at, (double) to)
            .num("nPast", (double) s.n_past);
    }
}

void validate_forward(const SessionState & s, const ForwardRequest & req) {
    if (s.closed) throw RuntimeError("SESSION_CLOSED", "the session is closed");
    if (s.core->disposed) throw RuntimeError("RUNTIME_DISPOSED", "the runtime was disposed");
    const Model & m = *s.core->model;
    if (req.n_tokens <= 0)
        throw RuntimeError("EMPTY_INPUT", "forward needs at least one token").num("tokens", (double) req.n_tokens);
    if (req.kind == InputKind::Tokens) {
        if (!s.embed) {
            throw RuntimeError("INPUT_KIND", "this range starts at block " + std::to_string(s.il0) +
                                                 " without the embedding; it takes hidden states, not token ids")
                .num("from", s.il0);
        }
        for (size_t i = 0; i < req.tokens.size(); ++i) {
            const int32_t t = req.tokens[i];
            if (t < 0 || t >= m.hp.n_vocab) {
                throw RuntimeError("TOKEN_OUT_OF_RANGE", "token id " + std::to_string(t) + " at index " +
                                                             std::to_string(i) + " is outside the vocabulary [0, " +
                                                             std::to_string(m.hp.n_vocab) + ")")
                    .num("token", t)
                    .num("index", (double) i)
                    .num("vocab", (double) m.hp.n_vocab);
            }
        }
    } else {
        if (s.embed)
            throw RuntimeError("INPUT_KIND", "this range embeds tokens; it takes token ids, not hidden states")
                .num("from", s.il0);
        const int64_t width = m.hp.hidden_width();
        if ((int64_t) req.hidden.size() != req.n_tokens * width) {
            throw RuntimeError("HIDDEN_SIZE", "hidden states hold " + std::to_string(req.hidden.size()) +
                                                  " values, expected " + std::to_string(req.n_tokens) + " tokens x " +
                                                  std::to_string(width) + " per token")
                .num("got", (double) req.hidden.size())
                .num("expected", (double) (req.n_tokens * width))
                .num("nEmbd", (double) width);
        }
    }
    validate_token_ids(s, req);
    if (req.start < 0 || req.start > s.n_past) {
        throw RuntimeError("POSITION_GAP", "first position " + std::to_string(req.start) + " leaves a gap after the " +
                                               std::to_string(s.n_past) + " cached positions")
            .num("position", (double) req.start)
            .num("nPast", (double) s.n_past);
    }
    check_rollback(s, req.start, false);
    validate_seam_inputs(s, req);
    if (req.start + req.n_tokens > s.max_tokens) {
        throw RuntimeError("POSITION_PAST_MAX", "position " + std::to_string(req.start + req.n_tokens - 1) +
                                                    " is past the session's maxTokens " + std::to_string(s.max_tokens))
            .num("position", (double) (req.start + req.n_tokens - 1))
            .num("maxTokens", (double) s.max_tokens);
    }
}

namespace {

// One graph over req's tokens (at most a sliding-window ring's slack of them).
ForwardResult forward_chunk(SessionState & s, const ForwardRequest & req) {
    RuntimeCore & core = *s.core;
    const Model & m = *core.model;
    const KvCache & kv = *s.kv;
    const int64_t n = req.n_tokens;
    const int64_t n_end = req.start + n;
    // llama.cpp pads the attended cells to 256 so graphs repeat;
    // same here (masked cells cost nothing in flash attention)
    const int64_t n_kv = std::min<int64_t>(kv.size, std::max<int64_t>(256, (n_end + 255) / 256 * 256));
    const int64_t n_kv_swa = kv.swa_size > 0 ? std::min(kv.swa_size, n_kv) : 0;
    const int64_t n_outputs = (s.head && !req.all_outputs) ? 1 : n;

    ggml_init_params p = {ggml_tensor_overhead() * core.graph_size + ggml_graph_overhead_custom(core.graph_size, false),
                          nullptr, true};
    ggml_context * ctx0 = ggml_init(p);
    struct CtxGuard {
        ggml_context * c;
        ~CtxGuard() { ggml_free(c); }
    } guard{ctx0};
    ggml_cgraph * gf = ggml_new_graph_custom(ctx0, core.graph_size, false);

    GraphBuilder g(m, kv, ctx0, gf, n, n_kv, n_kv_swa, n_outputs, core.flash_attn, s.il0, s.il1, s.embed, s.head);
    Dsv4Inputs dsv4 = m.hp.is_dsv4() ? dsv4_plan(req.start, n) : Dsv4Inputs{};  // deepseek4's compressor plans
    g.dsv4 = &dsv4;
    ggml_tensor * res = nullptr;
    switch (m.hp.arch) {
        case Arch::Llama: res = build_llama(g, req.kind); break;
        case Arch::Qwen2:
        case Arch::GptOss: res = build_qwen2(g, req.kind); break;
        case Arch::Qwen3:
        case Arch::Qwen3Moe: res = build_qwen3(g, req.kind); break;
        case Arch::DeepSeek2: res = build_deepseek2(g, req.kind); break;
        case Arch::Qwen35Moe: res = build_qwen35moe(g, req.kind); break;
        case Arch::GlmDsa: res = build_glm_dsa(g, req.kind); break;
        case Arch::DeepSeek4: res = build_deepseek4(g, req.kind); break;
    }
    ggml_set_output(res);
    ggml_build_forward_expand(gf, res);

    ggml_backend_sched_reset(core.sched);
    if (!ggml_backend_sched_alloc_graph(core.sched, gf))
        throw RuntimeError("OUT_OF_MEMORY", "cannot allocate the compute graph");

    // inputs the graph lacks are null (e.g. positions in a head-only range); one it never reaches has no buffer
    auto used = [](ggml_tensor * t) { return t && t->buffer; };
    if (used(g.inp_tokens)) ggml_backend_tensor_set(g.inp_tokens, req.tokens.data(), 0, n * sizeof(int32_t));
    if (used(g.inp_embd)) ggml_backend_tensor_set(g.inp_embd, req.hidden.data(), 0, req.hidden.size() * sizeof(float));
    if (used(g.inp_token_ids)) ggml_backend_tensor_set(g.inp_token_ids, req.token_ids.data(), 0, n * sizeof(int32_t));
    if (m.hp.is_dsv4()) dsv4_set_inputs(g, dsv4, req.start, n);
    if (used(g.inp_pos)) {
        // M-RoPE of text: the first three sections take the position, the fourth 0 (llm_graph_input_pos)
        const int64_t per = m.hp.n_pos_per_token();
        std::vector<int32_t> pos(n * per, 0);
        for (int64_t j = 0; j < std::min<int64_t>(per, 3); ++j)
            for (int64_t i = 0; i < n; ++i) pos[j * n + i] = (int32_t) (req.start + i);
        ggml_backend_tensor_set(g.inp_pos, pos.data(), 0, pos.size() * sizeof(int32_t));
    }
    auto set_cells = [&](ggml_tensor * t, int64_t ring) {
        if (!used(t)) return;
        std::vector<int64_t> idx(n);
        for (int64_t i = 0; i < n; ++i) idx[i] = ring > 0 ? (req.start + i) % ring : req.start + i;
        ggml_backend_tensor_set(t, idx.data(), 0, n * sizeof(int64_t));
    };
    set_cells(g.inp_kv_idxs, 0);
    set_cells(g.inp_kv_idxs_swa, kv.swa_size);
    // causal: token at position p sees positions [0, p]; on sliding-window blocks only (p - n_swa, p], where
    // cell c of the ring holds the last position below n_end that maps to it
    auto set_mask = [&](ggml_tensor * t, int64_t cells, int64_t ring, int64_t window) {
        if (!used(t)) return;
        auto visible = [&](int64_t i, int64_t c) {
            int64_t at = c;
            if (ring > 0) {
                if (c >= n_end) return false;
                at = c + (n_end - 1 - c) / ring * ring;
            }
            const int64_t pos = req.start + i;
            return at <= pos && (window == 0 || pos - at < window);
        };
        if (core.flash_attn) {
            const ggml_fp16_t zero = ggml_fp32_to_fp16(0.0f), ninf = ggml_fp32_to_fp16(-INFINITY);
            std::vector<ggml_fp16_t> mask(cells * n);
            for (int64_t i = 0; i < n; ++i)
                for (int64_t c = 0; c < cells; ++c) mask[i * cells + c] = visible(i, c) ? zero : ninf;
            ggml_backend_tensor_set(t, mask.data(), 0, mask.size() * sizeof(ggml_fp16_t));
        } else {
            std::vector<float> mask(cells * n);
            for (int64_t i = 0; i < n; ++i)
                for (int64_t c = 0; c < cells; ++c) mask[i * cells + c] = visible(i, c) ? 0.0f : -INFINITY;
            ggml_backend_tensor_set(t, mask.data(), 0, mask.size() * sizeof(float));
        }
    };
    set_mask(g.inp_kq_mask, n_kv, 0, 0);
    set_mask(g.inp_kq_mask_swa, n_kv_swa, kv.swa_size, m.hp.n_swa);
    if (used(g.inp_out_ids)) {
        std::vector<int32_t> ids(n_outputs);
        for (int64_t i = 0; i < n_outputs; ++i) ids[i] = (int32_t) (n - n_outputs + i);
        ggml_backend_tensor_set(g.inp_out_ids, ids.data(), 0, n_outputs * sizeof(int32_t));
    }
    set_dsa_inputs(g, req);

    if (ggml_backend_sched_graph_compute(core.sched, gf) != GGML_STATUS_SUCCESS) {
        throw RuntimeError("COMPUTE_FAILED", "ggml graph compute failed");
    }
    ForwardResult out;
    out.cols = res->ne[0];
    out.rows = res->ne[1];
    out.data.resize(out.cols * out.rows);
    ggml_backend_tensor_get(res, out.data.data(), 0, out.data.size() * sizeof(float));
    read_dsa_indices(g, s, req, out);
    s.n_past = n_end;
    s.ring_written = req.start == 0 ? n_end : std::max(s.ring_written, n_end);
    return out;
}

ForwardResult forward_slices(SessionState & s, const ForwardRequest & req) {
    RuntimeCore & core = *s.core;
    // a sliding-window ring holds window + slack cells: longer inputs go through in slices, as llama.cpp's ubatches do
    const int64_t slice = s.kv->ring() ? s.kv->swa_size - core.model->hp.n_swa : req.n_tokens;
    ForwardResult out;
    if (slice >= req.n_tokens) {
        out = forward_chunk(s, req);
    } else {
        const int64_t n_embd = core.model->hp.hidden_width();
        for (int64_t from = 0; from < req.n_tokens; from += slice) {
            ForwardRequest part;
            part.kind = req.kind;
            part.n_tokens = std::min(slice, req.n_tokens - from);
            part.start = req.start + from;
            part.all_outputs = req.all_outputs;
            if (req.kind == InputKind::Tokens) {
                part.tokens.assign(req.tokens.begin() + from, req.tokens.begin() + from + part.n_tokens);
            } else {
                part.hidden.assign(req.hidden.begin() + from * n_embd,
                                   req.hidden.begin() + (from + part.n_tokens) * n_embd);
            }
            const auto rows = [&](const std::vector<int32_t> & v) {  // per-token side data, token-major
                const size_t w = v.size() / req.n_tokens;
                return std::vector<int32_t>(v.begin() + from * w, v.begin() + (from + part.n_tokens) * w);
            };
            part.token_ids = rows(req.token_ids);
            part.indices = rows(req.indices);
            ForwardResult r = forward_chunk(s, part);
            // logits of the last position only (unless all asked for): the last slice's; hidden states: every row
            if (s.head && !req.all_outputs) out.data.clear(), out.rows = 0;
            out.cols = r.cols;
            out.rows += r.rows;
            out.data.insert(out.data.end(), r.data.begin(), r.data.end());
            out.indices.insert(out.indices.end(), r.indices.begin(), r.indices.end());
        }
    }
    if (req.f16_output) {
        out.half.resize(out.data.size());
        ggml_fp32_to_fp16_row(out.data.data(), out.half.data(), (int64_t) out.data.size());
        out.data = {};
    }
    return out;
}

}  // namespace

ForwardResult forward(SessionState & s, const ForwardRequest & req) {
    RuntimeCore & core = *s.core;
    std::lock_guard<std::mutex> lock(core.mu);
    validate_forward(s, req);
    if (s.kv->recurrent()) {
        // a replay from 0 starts from a zero state, as a new sequence does
        if (req.start == 0) s.kv->clear_recurrent();
        try {
            return forward_slices(s, req);
        } catch (...) {
            s.n_past = 0;  // the state may be half-updated: only a replay from 0 can follow
            throw;
        }
    }
    return forward_slices(s, req);
}

}  // namespace neuron
