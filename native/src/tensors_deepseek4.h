#pragma once
// DeepSeek-V4's tensors (tensors_deepseek4.cpp).
#include <string>
#include <vector>

#include "ggml-backend.h"
#include "tensors.h"

namespace neuron {

void deepseek4_block_wants(const HParams & hp, int il, Layer & L, std::vector<Want> & w);
// the hyper-connection collapse the head needs besides output_norm and output
void deepseek4_head_wants(const HParams & hp, Model & m, std::vector<Want> & w);
// what is wrong with the loaded weights' values ("" when nothing)
std::string deepseek4_weight_problem(const Model & m);

}  // namespace neuron
