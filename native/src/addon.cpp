// N-API surface of the runtime. Loading and forward passes run on libuv's worker pool;
// everything else is quick and synchronous. Typed errors become JS Errors with `code` and `details`.
#include <napi.h>

#include <cstring>

#include "addon_job.h"
#include "addon_seams.h"
#include "backend.h"
#include "errors.h"
#include "quantize.h"
#include "runtime.h"

using namespace neuron;

namespace {

std::vector<std::string> string_array(const Napi::Value & v) {
    std::vector<std::string> out;
    if (!v.IsArray()) return out;
    auto a = v.As<Napi::Array>();
    for (uint32_t i = 0; i < a.Length(); ++i) out.push_back(a.Get(i).As<Napi::String>().Utf8Value());
    return out;
}

class SessionWrap;

class RuntimeWrap : public Napi::ObjectWrap<RuntimeWrap> {
  public:
    static Napi::FunctionReference ctor;
    std::shared_ptr<RuntimeCore> core;

    static void Init(Napi::Env env, Napi::Object exports) {
        Napi::Function f = DefineClass(env, "NativeRuntime",
                                       {InstanceMethod("info", &RuntimeWrap::Info),
                                        InstanceMethod("openSession", &RuntimeWrap::OpenSession),
                                        InstanceMethod("forwardBatch", &RuntimeWrap::ForwardBatch),
                                        InstanceMethod("dispose", &RuntimeWrap::Dispose)});
        ctor = Napi::Persistent(f);
        exports.Set("NativeRuntime", f);
    }

    explicit RuntimeWrap(const Napi::CallbackInfo & info) : Napi::ObjectWrap<RuntimeWrap>(info) {
        if (info.Length() > 0 && info[0].IsExternal()) {
            core = *info[0].As<Napi::External<std::shared_ptr<RuntimeCore>>>().Data();
        }
    }

    Napi::Value Info(const Napi::CallbackInfo & info) {
        Napi::Env env = info.Env();
        return guard(env, [&]() -> Napi::Value {
            if (core->disposed) throw RuntimeError("RUNTIME_DISPOSED", "the runtime was disposed");
            const Model & m = *core->model;
            const HParams & hp = m.hp;
            Napi::Object o = Napi::Object::New(env);
            o.Set("arch", hp.arch_str);
            o.Set("nEmbd", (double) hp.n_embd);
            o.Set("nVocab", (double) hp.n_vocab);
            o.Set("nLayer", (double) hp.n_layer);
            o.Set("nHead", (double) hp.n_head);
            o.Set("nHeadKv", (double) hp.n_head_kv);
            Napi::Array blocks = Napi::Array::New(env, 2);
            blocks.Set((uint32_t) 0, (double) m.il0);
            blocks.Set((uint32_t) 1, (double) m.il1);
            o.Set("blocks", blocks);
            o.Set("embed", m.embed);
            o.Set("head", m.head);
            o.Set("device", ggml_backend_dev_name(core->dev));
            o.Set("deviceDescription", ggml_backend_dev_description(core->dev));
            o.Set("backend", ggml_backend_name(core->backend));
            o.Set("threads", core->threads);
            o.Set("threadPool", core->threadpool != nullptr);  // kept CPU threads across graphs (attach_cpu_threadpool)
            o.Set("flashAttention", core->flash_attn);
            o.Set("weightBytes", (double) m.weight_bytes);
            o.Set("mappedBytes", (double) m.mapped_bytes);  // of weightBytes, used in place from the artifact files
            o.Set("hugePageBytes", (double) m.huge_page_bytes);  // weight memory in 2 MB pages (huge_pages.cpp)
            o.Set("hiddenWidth", (double) hp.hidden_width());  // values per token at a seam (deepseek4: its streams)
            o.Set("hashLayers", (double) hp.dsv4.hash_layers);  // blocks routing experts by token id
            Napi::Object bufs = Napi::Object::New(env);
            for (const auto & [name, bytes] : m.weight_buffers) bufs.Set(name, (double) bytes);
            o.Set("weightBuffers", bufs);
            // f16 K and V for each block of the range
            o.Set("kvBytesPerToken", (double) ((hp.cache_k_values() + hp.cache_v_values()) *
                                               ggml_type_size(GGML_TYPE_F16) * (m.il1 - m.il0)));
            return o;
        });
    }

    Napi::Value OpenSession(const Napi::CallbackInfo & info);
    Napi::Value ForwardBatch(const Napi::CallbackInfo & info) { return forward_batch_js(info, core); }

    Napi::Value Dispose(const Napi::CallbackInfo & info) {
        if (core) core->dispose();
        return info.Env().Undefined();
    }
};
Napi::FunctionReference RuntimeWrap::ctor;

class SessionWrap : public Napi::ObjectWrap<SessionWrap> {
  public:
    static Napi::FunctionReference ctor;
    std::shared_ptr<SessionState> state;

    static void Init(Napi::Env env, Napi::Object exports) {
        Napi::Function f = DefineClass(
            env, "NativeSession",
            {InstanceMethod("forward", &SessionWrap::Forward), InstanceMethod("truncate", &SessionWrap::Truncate),
             InstanceMethod("copyPrefix", &SessionWrap::CopyPrefix), InstanceMethod("close", &SessionWrap::Close),
             InstanceAccessor("nPast", &SessionWrap::NPast, nullptr),
             InstanceAccessor("kvBytes", &SessionWrap::KvBytes, nullptr),
             InstanceAccessor("kvBytesPerBlock", &SessionWrap::KvBytesPerBlock, nullptr),
             InstanceAccessor("seam", &SessionWrap::Seam, nullptr)});
        ctor = Napi::Persistent(f);
        exports.Set("NativeSession", f);
    }

    explicit SessionWrap(const Napi::CallbackInfo & info) : Napi::ObjectWrap<SessionWrap>(info) {
        if (info.Length() > 0 && info[0].IsExternal())
            state = *info[0].As<Napi::External<std::shared_ptr<SessionState>>>().Data();
    }

    Napi::Value NPast(const Napi::CallbackInfo & info) { return Napi::Number::New(info.Env(), (double) state->n_past); }
    Napi::Value Seam(const Napi::CallbackInfo & info) {
        return guard(info.Env(), [&]() -> Napi::Value { return seam_object(info.Env(), *state); });
    }
    // each block's cache: K and V per position, a latent (MLA), or a sliding window's ring of cells
    Napi::Value KvBytesPerBlock(const Napi::CallbackInfo & info) {
        Napi::Env env = info.Env();
        const int n = state->il1 - state->il0;
        Napi::Array a = Napi::Array::New(env, (size_t) n);
        for (int i = 0; i < n; ++i)
            a.Set((uint32_t) i, state->kv ? (double) state->kv->block_bytes(state->il0 + i) : 0.0);
        return a;
    }
    Napi::Value KvBytes(const Napi::CallbackInfo & info) {
        return Napi::Number::New(info.Env(), state->kv ? (double) state->kv->bytes() : 0.0);
    }

    // forward(input, start, allOutputs, f16Output, side?: { tokenIds?,
    // indices? }) -> Promise<{ data, rows, cols, indices? }>
    Napi::Value Forward(const Napi::CallbackInfo & info) {
        Napi::Env env = info.Env();
        return guard(env, [&]() -> Napi::Value {
            check_idle();
            ForwardRequest req = read_forward_request(
                *state, info[0], (int64_t) info[1].As<Napi::Number>().Int64Value(), info[2].ToBoolean().Value(),
                info.Length() > 3 && info[3].ToBoolean().Value(), info.Length() > 4 ? info[4] : env.Undefined());
            validate_forward(*state, req);
            auto * job = new ForwardJob(env, state, std::move(req));
            state->busy.store(true);
            state->core->in_flight++;
            Napi::Promise p = job->promise();
            job->Queue();
            return p;
        });
    }

    Napi::Value Truncate(const Napi::CallbackInfo & info) {
        Napi::Env env = info.Env();
        return guard(env, [&]() -> Napi::Value {
            check_idle();
            const int64_t n = info[0].As<Napi::Number>().Int64Value();
            if (n < 0 || n > state->n_past) {
                throw RuntimeError("BAD_TRUNCATE", "cannot truncate to " + std::to_string(n) +
                                                       " positions; the session holds " + std::to_string(state->n_past))
                    .num("nPast", (double) state->n_past)
                    .num("to", (double) n);
            }
            check_rollback(*state, n, true);
            state->n_past = n;  // later cells are masked out and overwritten
            return env.Undefined();
        });
    }

    // copyPrefix(source, n): this fresh session takes the source's first n cached positions (its K and V, copied), as
    // if it had run them: a host's prefix cache (host/serving/prefix-cache.ts). Both sessions are of this runtime, run
    // the same blocks and keep plain per-position K and V (what batches: batch_refusal); neither has a pass in flight.
    Napi::Value CopyPrefix(const Napi::CallbackInfo & info) {
        Napi::Env env = info.Env();
        return guard(env, [&]() -> Napi::Value {
            check_idle();
            if (info.Length() < 2 || !info[0].IsObject() || !info[0].As<Napi::Object>().InstanceOf(ctor.Value()))
                throw RuntimeError("BAD_SOURCE", "copyPrefix takes a NativeSession of the same runtime and a count");
            const SessionState & src = *SessionWrap::Unwrap(info[0].As<Napi::Object>())->state;
            const int64_t n = info[1].As<Napi::Number>().Int64Value();
            if (src.closed) throw RuntimeError("SESSION_CLOSED", "the source session is closed");
            if (src.busy.load())
                throw RuntimeError("SESSION_BUSY", "the source session has a forward pass in flight; await it first");
            if (src.core != state->core || src.il0 != state->il0 || src.il1 != state->il1)
                throw RuntimeError("BAD_SOURCE", "the source session runs other blocks or another runtime");
            if (const char * why = batch_refusal(*state))
                throw RuntimeError("PREFIX_UNSUPPORTED", std::string("cannot copy a cache prefix: ") + why);
            if (n < 0 || n > src.n_past || n > state->max_tokens)
                throw RuntimeError("BAD_TRUNCATE", "cannot copy " + std::to_string(n) +
                                                       " positions: the source holds " + std::to_string(src.n_past) +
                                                       ", this session takes " + std::to_string(state->max_tokens))
                    .num("nPast", (double) src.n_past)
                    .num("to", (double) n);
            const KvCache & from = *src.kv;
            const KvCache & to = *state->kv;
            auto copy_rows = [n](const ggml_tensor * a, ggml_tensor * b) {
                if (a == nullptr || b == nullptr) return;
                const size_t bytes = a->nb[1] * (size_t) n;
                if (a->type != b->type || a->ne[0] != b->ne[0] || bytes > ggml_nbytes(b))
                    throw RuntimeError("BAD_SOURCE", "the source session's cache has another layout");
                if (ggml_backend_buffer_is_host(a->buffer) && ggml_backend_buffer_is_host(b->buffer)) {
                    std::memcpy(b->data, a->data, bytes);
                    return;
                }
                std::vector<uint8_t> tmp(bytes);
                ggml_backend_tensor_get(a, tmp.data(), 0, bytes);
                ggml_backend_tensor_set(b, tmp.data(), 0, bytes);
            };
            for (size_t i = 0; i < from.k.size() && i < to.k.size(); ++i) {
                copy_rows(from.k[i], to.k[i]);
                copy_rows(from.v[i], to.v[i]);
            }
            state->n_past = n;
            state->ring_written = n;
            return env.Undefined();
        });
    }

    Napi::Value Close(const Napi::CallbackInfo & info) {
        state->closed = true;
        if (!state->busy) state->kv.reset();  // else the forward pass in flight frees it when it settles
        return info.Env().Undefined();
    }

  private:
    // forward and truncate need an open session with no forward pass in flight
    void check_idle() const {
        if (state->closed) throw RuntimeError("SESSION_CLOSED", "the session is closed");
        if (state->busy.load())
            throw RuntimeError("SESSION_BUSY", "the session has a forward pass in flight; await it first");
    }

    class ForwardJob : public Job {
      public:
          ForwardJob(Napi::Env env, std::shared_ptr<SessionState> s, ForwardRequest req)
              : Job(env), s_(std::move(s)), req_(std::move(req)) {}

      protected:
        void run() override { out_ = forward(*s_, req_); }
        void settled() override {
            s_->busy.store(false);
            if (s_->closed) s_->kv.reset();
            RuntimeCore & core = *s_->core;
            if (--core.in_flight == 0 && core.disposed) core.release();
        }
        Napi::Value result(Napi::Env env) override { return forward_result_object(env, req_, out_); }

      private:
        std::shared_ptr<SessionState> s_;
        ForwardRequest req_;
        ForwardResult out_;
    };
};
Napi::FunctionReference SessionWrap::ctor;

}  // namespace

std::shared_ptr<SessionState> neuron::session_state_of(const Napi::Value & v) {
    if (!v.IsObject() || !v.As<Napi::Object>().InstanceOf(SessionWrap::ctor.Value())) {
        throw RuntimeError("BAD_INPUT", "a batch item's session must be a NativeSession");
    }
    return SessionWrap::Unwrap(v.As<Napi::Object>())->state;
}

namespace {

Napi::Value RuntimeWrap::OpenSession(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    return guard(env, [&]() -> Napi::Value {
        // openSession(maxTokens, from?, to?): blocks [from, to) of the runtime's range (default: all of it)
        const int64_t max_tokens = info[0].As<Napi::Number>().Int64Value();
        std::pair<int64_t, int64_t> blocks;
        const bool sub = info.Length() > 2 && info[1].IsNumber() && info[2].IsNumber();
        if (sub) blocks = {info[1].As<Napi::Number>().Int64Value(), info[2].As<Napi::Number>().Int64Value()};
        auto s = open_session(core, max_tokens, sub ? &blocks : nullptr);
        return SessionWrap::ctor.New({Napi::External<std::shared_ptr<SessionState>>::New(env, &s)});
    });
}

class LoadJob : public Job {
  public:
    LoadJob(Napi::Env env, RuntimeOptions opts) : Job(env), opts_(std::move(opts)) {}

  protected:
    void run() override { core_ = RuntimeCore::load(opts_); }
    Napi::Value result(Napi::Env env) override {
        return RuntimeWrap::ctor.New({Napi::External<std::shared_ptr<RuntimeCore>>::New(env, &core_)});
    }

  private:
    RuntimeOptions opts_;
    std::shared_ptr<RuntimeCore> core_;
};

// initBackends({ dirs: string[], libs: string[] }) -> { devices, problems }
Napi::Value InitBackends(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    return guard(env, [&]() -> Napi::Value {
        auto o = info[0].As<Napi::Object>();
        auto problems = load_backends(string_array(o.Get("dirs")), string_array(o.Get("libs")));
        Napi::Object out = Napi::Object::New(env);
        out.Set("devices", to_js_array(env, device_names()));
        out.Set("problems", to_js_array(env, problems));
        return out;
    });
}

// loadRuntime({ artifacts, from, to, embed, head, threads, device,
// flashAttention, mmap, hugePages }) -> Promise<NativeRuntime>
Napi::Value LoadRuntime(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    return guard(env, [&]() -> Napi::Value {
        auto o = info[0].As<Napi::Object>();
        RuntimeOptions opts;
        opts.load.artifacts = string_array(o.Get("artifacts"));
        opts.load.il0 = o.Get("from").As<Napi::Number>().Int32Value();
        opts.load.il1 = o.Get("to").As<Napi::Number>().Int32Value();
        opts.load.embed = o.Get("embed").ToBoolean().Value();
        opts.load.head = o.Get("head").ToBoolean().Value();
        opts.threads = o.Get("threads").As<Napi::Number>().Int32Value();
        if (o.Has("device") && o.Get("device").IsString()) opts.device = o.Get("device").As<Napi::String>().Utf8Value();
        if (o.Has("flashAttention")) opts.flash_attn = o.Get("flashAttention").ToBoolean().Value();
        if (o.Has("mmap")) opts.load.mmap = o.Get("mmap").ToBoolean().Value();
        if (o.Has("hugePages")) opts.load.huge_pages = o.Get("hugePages").ToBoolean().Value();
        auto * job = new LoadJob(env, std::move(opts));
        Napi::Promise p = job->promise();
        job->Queue();
        return p;
    });
}

// quantize(type: string, values: Float32Array, nPerRow: number)
// -> Buffer of ggml blocks (synchronous; callers pass row chunks)
Napi::Value Quantize(const Napi::CallbackInfo & info) {
    Napi::Env env = info.Env();
    return guard(env, [&]() -> Napi::Value {
        if (info.Length() < 3 || !info[0].IsString() || !info[1].IsTypedArray() ||
            info[1].As<Napi::TypedArray>().TypedArrayType() != napi_float32_array || !info[2].IsNumber()) {
            throw RuntimeError("BAD_QUANT_INPUT",
                               "quantize takes (type: string, values: Float32Array, nPerRow: number)");
        }
        auto values = info[1].As<Napi::Float32Array>();
        auto bytes = quantize_rows(info[0].As<Napi::String>().Utf8Value(), values.Data(),
                                   (int64_t) values.ElementLength(), info[2].As<Napi::Number>().Int64Value());
        return Napi::Buffer<uint8_t>::Copy(env, bytes.data(), bytes.size());
    });
}

Napi::Object Init(Napi::Env env, Napi::Object exports) {
    RuntimeWrap::Init(env, exports);
    SessionWrap::Init(env, exports);
    exports.Set("initBackends", Napi::Function::New(env, InitBackends));
    exports.Set("loadRuntime", Napi::Function::New(env, LoadRuntime));
    exports.Set("quantize", Napi::Function::New(env, Quantize));
    return exports;
}

}  // namespace

NODE_API_MODULE(neuron_native, Init)
