// Row quantization through ggml_quantize_chunk: the same code llama-quantize runs, so a file
// written with it holds the bytes llama.cpp would have written for these values.
#include "quantize.h"

#include <ggml.h>

#include "errors.h"

namespace neuron {

namespace {

// A call quantizes at most this many values (1 GiB of f32): callers pass row chunks, not whole models.
constexpr int64_t MAX_VALUES = int64_t(1) << 28;

// The block formats ggml quantizes without an imatrix and llama-quantize picks among for K-quant mixes.
constexpr ggml_type QUANTIZABLE[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1, GGML_TYPE_Q8_0,
                                     GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};

ggml_type quantizable_type(const std::string & name) {
    std::vector<std::string> names;
    for (ggml_type type : QUANTIZABLE) {
        if (name == ggml_type_name(type)) return type;
        names.emplace_back(ggml_type_name(type));
    }
    throw RuntimeError("BAD_QUANT_TYPE",
                       "cannot quantize to \"" + name + "\"; the quantizer writes " + join_names(names))
        .str("type", name)
        .list("types", names);
}

}  // namespace

std::vector<uint8_t> quantize_rows(const std::string & type_name, const float * values, int64_t n, int64_t n_per_row) {
    const ggml_type type = quantizable_type(type_name);
    const int64_t block = ggml_blck_size(type);
    if (n_per_row < 1 || n_per_row % block != 0) {
        throw RuntimeError("BAD_QUANT_INPUT", type_name + " packs " + std::to_string(block) +
                                                  " values per block; a row of " + std::to_string(n_per_row) +
                                                  " values is not a whole number of blocks")
            .num("nPerRow", (double) n_per_row)
            .num("blockSize", (double) block);
    }
    if (n < 1 || n > MAX_VALUES || n % n_per_row != 0) {
        throw RuntimeError("BAD_QUANT_INPUT", std::to_string(n) + " values are not 1 to " +
                                                  std::to_string(MAX_VALUES / n_per_row) + " whole rows of " +
                                                  std::to_string(n_per_row) + "; quantize large tensors in row chunks")
            .num("values", (double) n)
            .num("nPerRow", (double) n_per_row);
    }
    const int64_t rows = n / n_per_row;
    std::vector<uint8_t> out(ggml_row_size(type, n_per_row) * rows);
    const size_t written = ggml_quantize_chunk(type, values, out.data(), 0, rows, n_per_row, nullptr);
    if (written != out.size())
        throw RuntimeError("INTERNAL", "ggml_quantize_chunk wrote " + std::to_string(written) + " bytes, expected " +
                                           std::to_string(out.size()));
    return out;
}

}  // namespace neuron
