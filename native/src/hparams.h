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

int64_t require_int(const gguf_context * g, const std::string & key, const std::string & path);
// hparams_glm_dsa.cpp: the indexer's sizes and which blocks run it (block_count less the MTP blocks)
void read_glm_dsa(const gguf_context * g, const std::string & a, const std::string & path, HParams & hp);

HParams read_hparams(const gguf_context * g, const std::string & path);

}  // namespace neuron
