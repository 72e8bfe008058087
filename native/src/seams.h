#pragma once
// What crosses a session's seams besides the hidden state (protocol/seams.ts states it per boundary in the manifest):
// glm-dsa's top-k indices before a shared-indexer block; token ids for families whose later blocks need them.
#include <cstdint>

#include "graph.h"
#include "runtime.h"

namespace neuron {

struct SeamShape {
    int64_t input_width = 0;   // values per token of a hidden-state input (deepseek4: hc x n_embd streams)
    int64_t output_width = 0;  // values per token of a hidden-state output
    // token ids: session_needs_token_ids (seam_inputs.cpp), which knows whether the session embeds
    int64_t indices_in = 0;    // int32 per token expected with the input (glm-dsa: the range starts at a shared block)
    int64_t indices_out = 0;   // int32 per token returned with a hidden output (glm-dsa: the next block is shared)
};

SeamShape seam_shape(const HParams & hp, int il0, int il1);
// lengths and values of the indices (BAD_INDICES; token ids:
// validate_token_ids in seam_inputs.cpp): nothing unchecked may reach ggml
void validate_seam_inputs(const SessionState & s, const ForwardRequest & req);
// after allocation: the indexer's mask and rotation, the attention mask of the previous hop's indices
void set_dsa_inputs(const GraphBuilder & g, const ForwardRequest & req);
// after compute: the indices for the next hop, each token's cells at or before its position, ascending, -1 after
void read_dsa_indices(const GraphBuilder & g, const SessionState & s, const ForwardRequest & req, ForwardResult & out);

}  // namespace neuron
