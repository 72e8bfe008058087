#pragma once
// The parts of read_hparams (hparams.cpp) that have a file of their own, and the bounds they share.
#include <cstdint>
#include <string>

#include "hparams.h"

namespace neuron {

constexpr int64_t MAX_DIM = 1 << 20;  // any width, head count or rank
constexpr int64_t MAX_BLOCKS = 4096;

// hparams_experts.cpp: expert counts, groups and gating, with llama_model::load_hparams's checks
void read_experts(const gguf_context * g, const std::string & a, HParams & hp);
// hparams_qwen35.cpp: delta-net sizes, M-RoPE sections, which blocks are recurrent (block_count less the MTP blocks)
void read_qwen35(const gguf_context * g, const std::string & a, const std::string & path, HParams & hp);
// hparams_checks.cpp: the sizes a graph can be built over, every family's (deepseek4's own follow in check_deepseek4)
void check_sizes(const HParams & hp);

}  // namespace neuron
