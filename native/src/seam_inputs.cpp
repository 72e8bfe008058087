// What crosses a seam besides the hidden state, checked before compute: deepseek4's token ids.
#include "errors.h"
#include "runtime.h"

namespace neuron {

bool session_needs_token_ids(const SessionState & s) {
    const HParams & hp = s.core->model->hp;
    return !s.embed && s.il0 < s.il1 && hp.needs_token_ids(s.il0);
}

// deepseek4's hash-routed blocks look each hidden row's token id up: exactly n_tokens ids in the vocabulary
void validate_token_ids(const SessionState & s, const ForwardRequest & req) {
    const int64_t n_vocab = s.core->model->hp.n_vocab;
    if (!session_needs_token_ids(s)) {
        if (!req.token_ids.empty()) {
            throw RuntimeError("TOKEN_IDS_UNEXPECTED",
                               "blocks [" + std::to_string(s.il0) + ", " + std::to_string(s.il1) +
                                   ") do not route by token id; send hidden states without tokenIds")
                .num("from", s.il0);
        }
        return;
    }
    if ((int64_t) req.token_ids.size() != req.n_tokens) {
        throw RuntimeError("TOKEN_IDS_SIZE",
                           "block " + std::to_string(s.il0) + " routes experts by token id: it needs " +
                               std::to_string(req.n_tokens) + " tokenIds with the hidden states, got " +
                               std::to_string(req.token_ids.size()))
            .num("got", (double) req.token_ids.size())
            .num("expected", (double) req.n_tokens);
    }
    for (size_t i = 0; i < req.token_ids.size(); ++i) {
        const int32_t t = req.token_ids[i];
        if (t < 0 || t >= n_vocab) {
            throw RuntimeError("TOKEN_OUT_OF_RANGE", "token id " + std::to_string(t) + " at index " +
                                                         std::to_string(i) + " is outside the vocabulary [0, " +
                                                         std::to_string(n_vocab) + ")")
                .num("token", t)
                .num("index", (double) i)
                .num("vocab", (double) n_vocab);
        }
    }
}

}  // namespace neuron
