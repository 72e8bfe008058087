#pragma once
// DeepSeek-V4's metadata (hparams_deepseek4.cpp), read after the shared keys and the experts.
#include <string>

#include "hparams.h"

namespace neuron {

void read_deepseek4(const gguf_context * g, const std::string & a, const std::string & path, HParams & hp);
// sizes the graph can be built over (after check_sizes' shared checks)
void check_deepseek4(const HParams & hp);

}  // namespace neuron
