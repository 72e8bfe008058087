#pragma once
// Hyper-parameters from a GGUF's metadata, resolved the way llama.cpp's loader and context do.
#include <cstdint>
#include <string>

#include "gguf.h"
#include "gguf_keys.h"
#include "model.h"

namespace neuron {

// hparams_glm_dsa.cpp: the indexer's sizes and which blocks run it (block_count less the MTP blocks)
void read_glm_dsa(const gguf_context * g, const std::string & a, const std::string & path, HParams & hp);

HParams read_hparams(const gguf_context * g, const std::string & path);

}  // namespace neuron
