#pragma once
// Which GGUF tensors a layer range needs, per architecture (llama.cpp's load_arch_tensors, for one range).
#include <cstdint>
#include <string>
#include <vector>

#include "ggml.h"
#include "model.h"

namespace neuron {

// What the graph needs from a GGUF tensor and where the weight goes.
struct Want {
    std::string name;     // name in the GGUF
    ggml_tensor ** slot;  // where the model keeps it
    bool required;
    ggml_op op;           // how the graph uses it (picks the buffer type)
    std::vector<int64_t> ne;  // the shape the metadata implies (ggml order); other dimensions must be 1
    std::string unless = "";  // required only when no tensor of this name is there (a fused alternative)
};

void block_wants(const HParams & hp, int il, Layer & L, std::vector<Want> & wants);
// why a tensor's shape is not the one wanted ("" when it is): a graph over wrong shapes would abort in ggml
std::string shape_problem(const Want & want, const ggml_tensor * t);

}  // namespace neuron
