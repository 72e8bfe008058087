#pragma once
// The N-API side of seams.h: a session's seam shape, the side inputs a forward takes, the indices it returns.
#include <napi.h>

#include "runtime.h"

namespace neuron {

// { inputWidth, outputWidth, needsTokenIds, indicesIn, indicesOut }
Napi::Object seam_object(Napi::Env env, const SessionState & s);
// forward's 5th argument, { tokenIds?: Int32Array, indices?: Int32Array } (BAD_INPUT on other types)
void read_side_inputs(const Napi::Value & v, ForwardRequest & req);
// `indices` on a hidden-state result that carries them
void write_side_outputs(Napi::Env env, Napi::Object & o, const ForwardResult & out);

}  // namespace neuron
