#pragma once
// A GGUF's metadata values by key, read as llama.cpp's loader reads them (gguf_keys.cpp).
#include <cstdint>
#include <optional>
#include <string>

#include "gguf.h"

namespace neuron {

std::optional<int64_t> get_int(const gguf_context * g, const std::string & key);
std::optional<float> get_float(const gguf_context * g, const std::string & key);
std::optional<std::string> get_str(const gguf_context * g, const std::string & key);

int64_t require_int(const gguf_context * g, const std::string & key, const std::string & path);

}  // namespace neuron
