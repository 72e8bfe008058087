#include "addon_seams.h"

#include <cstring>

#include "errors.h"
#include "seams.h"

namespace neuron {

Napi::Object seam_object(Napi::Env env, const SessionState & s) {
    if (s.core->disposed) throw RuntimeError("RUNTIME_DISPOSED", "the runtime was disposed");
    const SeamShape seam = seam_shape(s.core->model->hp, s.il0, s.il1);
    Napi::Object o = Napi::Object::New(env);
    o.Set("inputWidth", (double) seam.input_width);
    o.Set("outputWidth", (double) seam.output_width);
    o.Set("needsTokenIds", session_needs_token_ids(s));
    o.Set("indicesIn", (double) seam.indices_in);
    o.Set("indicesOut", (double) seam.indices_out);
    return o;
}

void read_side_inputs(const Napi::Value & v, ForwardRequest & req) {
    if (v.IsUndefined() || v.IsNull()) return;
    if (!v.IsObject())
        throw RuntimeError("BAD_INPUT", "forward's side inputs must be an object { tokenIds?, indices? }");
    const Napi::Object o = v.As<Napi::Object>();
    auto ints = [&](const char * key, std::vector<int32_t> & dst) {
        const Napi::Value x = o.Get(key);
        if (x.IsUndefined()) return;
        if (!x.IsTypedArray() || x.As<Napi::TypedArray>().TypedArrayType() != napi_int32_array) {
            throw RuntimeError("BAD_INPUT", std::string(key) + " must be an Int32Array").str("field", key);
        }
        auto a = x.As<Napi::Int32Array>();
        dst.assign(a.Data(), a.Data() + a.ElementLength());
    };
    ints("tokenIds", req.token_ids);
    ints("indices", req.indices);
}

void write_side_outputs(Napi::Env env, Napi::Object & o, const ForwardResult & out) {
    if (out.indices.empty()) return;
    Napi::Int32Array a = Napi::Int32Array::New(env, out.indices.size());
    std::memcpy(a.Data(), out.indices.data(), out.indices.size() * sizeof(int32_t));
    o.Set("indices", a);
}

}  // namespace neuron
