#pragma once
// Hyper-parameters from a GGUF's metadata, resolved the way llama.cpp's loader and context do.
#include <cstdint>
#include <optional>
#include <string>

#include "gguf.h"
#include "model.h"

namespace neuron {

std::optional<int64_t> get_int(const gguf_context * g, const std::string & key);
std::optional<float> get_float(const gguf_context * g, const std::string & key);
std::optional<std::string> get_str(const gguf_context * g, const std::string & key);

HParams read_hparams(const gguf_context * g, const std::string & path);

}  // namespace neuron
