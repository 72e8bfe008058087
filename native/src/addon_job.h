#pragma once
// What every N-API entry point shares: typed errors as JS Errors,
// the promise-settling worker, a forward's request and result.
#include <napi.h>

#include <memory>
#include <string>
#include <vector>

#include "errors.h"
#include "runtime.h"

namespace neuron {

inline Napi::Array to_js_array(Napi::Env env, const std::vector<std::string> & v) {
    Napi::Array a = Napi::Array::New(env, v.size());
    for (size_t i = 0; i < v.size(); ++i) a.Set(i, v[i]);
    return a;
}

inline Napi::Error to_js_error(Napi::Env env, const RuntimeError & e) {
    Napi::Error err = Napi::Error::New(env, e.what());
    err.Set("code", Napi::String::New(env, e.code));
    Napi::Object details = Napi::Object::New(env);
    for (const auto & [k, v] : e.numbers) details.Set(k, Napi::Number::New(env, v));
    for (const auto & [k, v] : e.strings) details.Set(k, Napi::String::New(env, v));
    for (const auto & [k, v] : e.lists) details.Set(k, to_js_array(env, v));
    err.Set("details", details);
    return err;
}

template <typename F>
auto guard(Napi::Env env, F && f) -> decltype(f()) {
    try {
        return f();
    } catch (const RuntimeError & e) {
        throw to_js_error(env, e);
    } catch (const Napi::Error &) {
        throw;
    } catch (const std::exception & e) {
        throw to_js_error(env, RuntimeError("INTERNAL", e.what()));
    }
}

// An AsyncWorker that settles a promise and keeps typed errors typed.
class Job : public Napi::AsyncWorker {
  public:
    explicit Job(Napi::Env env) : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)) {}
    Napi::Promise promise() { return deferred_.Promise(); }

  protected:
    virtual void run() = 0;
    virtual Napi::Value result(Napi::Env env) = 0;
    virtual void settled() {}

    void Execute() override {
        try {
            run();
        } catch (const RuntimeError & e) {
            error_ = std::make_unique<RuntimeError>(e);
            SetError(e.what());
        } catch (const std::exception & e) {
            error_ = std::make_unique<RuntimeError>("INTERNAL", e.what());
            SetError(e.what());
        }
    }
    void OnOK() override {
        settled();
        Napi::HandleScope scope(Env());
        try {
            deferred_.Resolve(result(Env()));
        } catch (const Napi::Error & e) {
            deferred_.Reject(e.Value());
        }
    }
    void OnError(const Napi::Error & e) override {
        settled();
        Napi::HandleScope scope(Env());
        deferred_.Reject(error_ ? to_js_error(Env(), *error_).Value() : e.Value());
    }

  private:
    Napi::Promise::Deferred deferred_;
    std::unique_ptr<RuntimeError> error_;
};

// forward's arguments: the input (Int32Array ids, Float32Array or f16 Uint16Array hidden states) and its options
ForwardRequest read_forward_request(const SessionState & s, const Napi::Value & input, int64_t start, bool all_outputs,
                                    bool f16_output, const Napi::Value & side);
// the native session a JS NativeSession wraps (BAD_INPUT for anything else); in addon.cpp
std::shared_ptr<SessionState> session_state_of(const Napi::Value & v);
// NativeRuntime.forwardBatch (addon_batch.cpp)
Napi::Value forward_batch_js(const Napi::CallbackInfo & info, const std::shared_ptr<RuntimeCore> & core);
// { data, rows, cols, indices? }
Napi::Object forward_result_object(Napi::Env env, const ForwardRequest & req, const ForwardResult & out);

}  // namespace neuron
