#pragma once
// ggml's row quantizers (the ones llama-quantize uses), for writing quantized GGUFs.
#include <cstdint>
#include <string>
#include <vector>

namespace neuron {

// Quantizes `n` f32 values, rows of `n_per_row`, to the ggml type named `type_name` ("q4_K", "q8_0", ...).
// Throws RuntimeError BAD_QUANT_TYPE / BAD_QUANT_INPUT on anything ggml would assert on.
std::vector<uint8_t> quantize_rows(const std::string & type_name, const float * values, int64_t n, int64_t n_per_row);

}  // namespace neuron
