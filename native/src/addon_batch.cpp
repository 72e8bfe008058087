// N-API side of batched forward passes (runtime_batch.cpp),
// and the request / result conversions forward shares with it.
#include <cstring>

#include "addon_job.h"
#include "addon_seams.h"

namespace neuron {

ForwardRequest read_forward_request(const SessionState & s, const Napi::Value & input, int64_t start, bool all_outputs,
                                    bool f16_output, const Napi::Value & side) {
    if (!input.IsTypedArray())
        throw RuntimeError("BAD_INPUT", "input must be an Int32Array, Float32Array or Uint16Array");
    auto ta = input.As<Napi::TypedArray>();
    ForwardRequest req;
    req.start = start;
    req.all_outputs = all_outputs;
    req.f16_output = f16_output;
    const int64_t n_embd = s.core->disposed ? 1 : s.core->model->hp.hidden_width();
    switch (ta.TypedArrayType()) {
        case napi_int32_array: {
            auto a = ta.As<Napi::Int32Array>();
            req.kind = InputKind::Tokens;
            req.tokens.assign(a.Data(), a.Data() + a.ElementLength());
            req.n_tokens = (int64_t) a.ElementLength();
            break;
        }
        case napi_float32_array: {
            auto a = ta.As<Napi::Float32Array>();
            req.kind = InputKind::HiddenF32;
            req.hidden.assign(a.Data(), a.Data() + a.ElementLength());
            req.n_tokens = std::max<int64_t>(1, (int64_t) a.ElementLength() / n_embd);
            break;
        }
        case napi_uint16_array: {
            auto a = ta.As<Napi::Uint16Array>();
            req.kind = InputKind::HiddenF16;
            req.hidden.resize(a.ElementLength());
            for (size_t i = 0; i < a.ElementLength(); ++i) req.hidden[i] = ggml_fp16_to_fp32(a.Data()[i]);
            req.n_tokens = std::max<int64_t>(1, (int64_t) a.ElementLength() / n_embd);
            break;
        }
        default: throw RuntimeError("BAD_INPUT", "input must be an Int32Array, Float32Array or Uint16Array");
    }
    if (!side.IsUndefined()) read_side_inputs(side, req);  // { tokenIds?, indices? }
    return req;
}

Napi::Object forward_result_object(Napi::Env env, const ForwardRequest & req, const ForwardResult & out) {
    Napi::Object o = Napi::Object::New(env);
    if (req.f16_output) {
        Napi::Uint16Array data = Napi::Uint16Array::New(env, out.half.size());
        std::memcpy(data.Data(), out.half.data(), out.half.size() * sizeof(ggml_fp16_t));
        o.Set("data", data);
    } else {
        Napi::Float32Array data = Napi::Float32Array::New(env, out.data.size());
        std::memcpy(data.Data(), out.data.data(), out.data.size() * sizeof(float));
        o.Set("data", data);
    }
    write_side_outputs(env, o, out);
    o.Set("rows", (double) out.rows);
    o.Set("cols", (double) out.cols);
    return o;
}

namespace {

// One batch on the worker pool. Each item settles on its own: { ok: true, data, rows, cols } or { ok: false, error }.
class BatchJob : public Job {
  public:
      BatchJob(Napi::Env env, std::shared_ptr<RuntimeCore> core, std::vector<std::shared_ptr<SessionState>> keep,
               std::vector<BatchItem> items)
          : Job(env), core_(std::move(core)), keep_(std::move(keep)), items_(std::move(items)) {}

  protected:
    void run() override {
        std::vector<BatchItem *> runnable;
        for (BatchItem & it : items_)
            if (!it.error) runnable.push_back(&it);
        if (runnable.empty()) return;
        // forward_batch takes the items it runs; those that failed on the JS thread keep their error
        std::vector<BatchItem> batch;
        for (BatchItem * it : runnable) batch.push_back(std::move(*it));
        forward_batch(*core_, batch);
        for (size_t i = 0; i < runnable.size(); ++i) *runnable[i] = std::move(batch[i]);
    }
    void settled() override {
        for (const auto & s : keep_) {
            if (!s) continue;
            s->busy.store(false);
            if (s->closed) s->kv.reset();  // a session closed while its step was in flight frees its cache now
        }
        if (--core_->in_flight == 0 && core_->disposed) core_->release();
    }
    Napi::Value result(Napi::Env env) override {
        Napi::Array a = Napi::Array::New(env, items_.size());
        for (size_t i = 0; i < items_.size(); ++i) {
            const BatchItem & it = items_[i];
            Napi::Object o;
            if (it.error) {
                o = Napi::Object::New(env);
                o.Set("ok", false);
                o.Set("error", to_js_error(env, *it.error).Value());
            } else {
                o = forward_result_object(env, it.req, it.out);
                o.Set("ok", true);
            }
            a.Set((uint32_t) i, o);
        }
        return a;
    }

  private:
    std::shared_ptr<RuntimeCore> core_;
    std::vector<std::shared_ptr<SessionState>> keep_;  // null where the item failed before queueing
    std::vector<BatchItem> items_;
};

}  // namespace

// forwardBatch([{ session, input, start, allOutputs, f16Output, side?
// }]) -> Promise<Array<result & { ok: true } | { ok: false, error }>>
Napi::Value forward_batch_js(const Napi::CallbackInfo & info, const std::shared_ptr<RuntimeCore> & core) {
    Napi::Env env = info.Env();
    return guard(env, [&]() -> Napi::Value {
        if (core->disposed) throw RuntimeError("RUNTIME_DISPOSED", "the runtime was disposed");
        if (info.Length() < 1 || !info[0].IsArray())
            throw RuntimeError("BAD_INPUT", "forwardBatch takes an array of items");
        auto arr = info[0].As<Napi::Array>();
        std::vector<BatchItem> items(arr.Length());
        std::vector<std::shared_ptr<SessionState>> keep(arr.Length());
        for (uint32_t i = 0; i < arr.Length(); ++i) {
            BatchItem & it = items[i];
            try {
                if (!arr.Get(i).IsObject()) throw RuntimeError("BAD_INPUT", "a batch item must be an object");
                auto o = arr.Get(i).As<Napi::Object>();
                auto s = session_state_of(o.Get("session"));
                if (s->core != core)
                    throw RuntimeError("BAD_INPUT", "a batch item's session belongs to another runtime");
                if (s->closed) throw RuntimeError("SESSION_CLOSED", "the session is closed");
                if (s->busy.load())
                    throw RuntimeError("SESSION_BUSY", "the session has a forward pass in flight; await it first");
                if (!o.Get("start").IsNumber())
                    throw RuntimeError("BAD_INPUT", "a batch item's start must be a number");
                it.req = read_forward_request(*s, o.Get("input"), o.Get("start").As<Napi::Number>().Int64Value(),
                                              o.Get("allOutputs").ToBoolean().Value(),
                                              o.Get("f16Output").ToBoolean().Value(), o.Get("side"));
                validate_forward(*s, it.req);
                it.session = s.get();
                s->busy.store(true);
                keep[i] = std::move(s);
            } catch (const RuntimeError & e) {
                it.error = std::make_unique<RuntimeError>(e);
            } catch (const Napi::Error & e) {
                it.error = std::make_unique<RuntimeError>("BAD_INPUT", e.Message());
            }
        }
        auto * job = new BatchJob(env, core, std::move(keep), std::move(items));
        core->in_flight++;
        Napi::Promise p = job->promise();
        job->Queue();
        return p;
    });
}

}  // namespace neuron
