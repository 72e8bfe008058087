#pragma once
// DeepSeek-V4's per-forward inputs (llama-kv-cache-dsv4.cpp's comp_plan, for one session's single sequence):
// which compressed keys this forward completes, where their source rows are, what each token sees.
#include <cstdint>
#include <vector>

#include "ggml.h"

namespace neuron {

struct GraphBuilder;
struct KvCache;

// one compression ratio's plan (4: overlapping windows, 2 x 4 state rows; 128: one window, 128 rows)
struct Dsv4Plan {
    int64_t ratio = 0;
    int64_t rows = 0;      // state rows: position p sits in row p % rows
    bool overlap = false;
    int64_t n_blocks = 0;  // compressed keys completed by this forward's tokens
    int64_t n_cells = 0;   // compressed keys visible to its last token (cells the attention reads)
    std::vector<int32_t> state_pos;    // [n]: p % ratio, the positional bias row
    std::vector<int32_t> read;         // source rows of each completed key: [state rows | batch rows | zero row]
    std::vector<int64_t> write;        // [n_blocks]: the cache cell of each completed key
    std::vector<int32_t> write_pos;    // [n_blocks]: its first position (its rotary position)
    std::vector<int32_t> persist_src;  // batch rows kept in the state...
    std::vector<int64_t> persist_dst;  // ...and the state rows they go to
    ggml_tensor * t_state_pos = nullptr;
    ggml_tensor * t_read = nullptr;
    ggml_tensor * t_write = nullptr;
    ggml_tensor * t_write_pos = nullptr;
    ggml_tensor * t_persist_src = nullptr;
    ggml_tensor * t_persist_dst = nullptr;
    ggml_tensor * t_mask = nullptr;  // [n_cells, n]: token i sees key j when j < (p_i + 1) / ratio
};

struct Dsv4Inputs {
    Dsv4Plan r4;
    Dsv4Plan r128;
    // Hadamard rotation of attention keys (llama.cpp rotates them when head size = indexer's)
    ggml_tensor * rot = nullptr;
    ggml_tensor * idx_rot = nullptr;  // the same for the indexer's keys (always)
    Dsv4Plan & plan(int64_t ratio) { return ratio == 4 ? r4 : r128; }
};

// the plans for positions [start, start + n) of a session with `cells` positions
Dsv4Inputs dsv4_plan(int64_t start, int64_t n);
// after allocation: the plans' values, the rotations, the token ids
void dsv4_set_inputs(const GraphBuilder & g, const Dsv4Inputs & in, int64_t start, int64_t n);

}  // namespace neuron

namespace neuron {

// block il's attention (graph_dsv4.cpp): low-rank Q, one rotary key = value head cached over the sliding
// window, plus (ratio 4) the top-k compressed keys the lightning indexer picks or (ratio 128) every
// compressed key; attention sinks; the output de-rotated and projected through grouped low-rank matrices
ggml_tensor * dsv4_attention(GraphBuilder & g, Dsv4Inputs & in, int il, ggml_tensor * x);

}  // namespace neuron
