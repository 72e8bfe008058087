"""build_moe_ffn: router, expert selection and the weighted sum of the chosen experts' FFNs."""
import torch

from ops import linear, swiglu_oai

SOFTMAX, SIGMOID, SOFTMAX_WEIGHT = 1, 2, 3  # llama_expert_gating_func_type


class Experts:
    """One layer's experts: stacked weights [n_expert, n_out, n_in] and optional biases [n_expert, n_out]."""

    def __init__(self, m, prefix):
        self.router = m.w(f"{prefix}.ffn_gate_inp.weight")
        self.router_b = m.opt(f"{prefix}.ffn_gate_inp.bias")
        if m.has(f"{prefix}.ffn_gate_up_exps.weight"):  # merged: gate rows first, then up
            self.gate, self.up = m.w(f"{prefix}.ffn_gate_up_exps.weight").chunk(2, dim=1)
        else:
            self.up = m.w(f"{prefix}.ffn_up_exps.weight")
            self.gate = m.w(f"{prefix}.ffn_gate_exps.weight")
        self.down = m.w(f"{prefix}.ffn_down_exps.weight")
        self.up_b = m.opt(f"{prefix}.ffn_up_exps.bias")
        self.gate_b = m.opt(f"{prefix}.ffn_gate_exps.bias")
        self.down_b = m.opt(f"{prefix}.ffn_down_exps.bias")
        self.probs_b = m.opt(f"{prefix}.exp_probs_b.bias")


def top_margin(scores, k):
    """Per row, the k-th largest score minus the (k+1)-th: how close the choice was to a tie."""
    s = scores.sort(dim=-1, descending=True).values
    return (s[:, k - 1] - s[:, k]) if scores.shape[-1] > k else torch.full((scores.shape[0],), float("inf"))


def select_experts(x, e, n_used, gating, norm_w, w_scale, groups=(0, 0), margins=None):
    """The experts each token uses [T, n_used] and their weights [T, n_used], as llama.cpp picks them."""
    logits = linear(x, e.router, e.router_b)  # [T, n_expert]
    if gating == SOFTMAX:
        probs = torch.softmax(logits, dim=-1)
    elif gating == SIGMOID:
        probs = torch.sigmoid(logits)
    elif gating == SOFTMAX_WEIGHT:
        probs = logits  # softmax comes after selection, over the chosen experts only
    else:
        raise ValueError(f"expert gating function {gating} is not implemented in the reference")
    # DeepSeek V3's selection bias changes which experts are chosen, never their weights
    selection = probs if e.probs_b is None else probs + e.probs_b
    n_groups, n_group_used = groups
    if n_groups > 1:
        t = selection.shape[0]
        grouped = selection.view(t, n_groups, -1)
        # a group scores the sum of its two best experts; all but the n_group_used best groups are masked
        group_scores = grouped.topk(2, dim=-1).values.sum(-1)
        keep = group_scores.topk(n_group_used, dim=-1).indices
        if margins is not None:
            margins.append(float(top_margin(group_scores, n_group_used).min()))
        mask = torch.ones(t, n_groups, dtype=torch.bool)
        mask.scatter_(1, keep, False)
        selection = grouped.masked_fill(mask[:, :, None], float("-inf")).view(t, -1)
    chosen = selection.topk(n_used, dim=-1).indices
    if margins is not None:
        margins.append(float(top_margin(selection, n_used).min()))
    weights = probs.gather(1, chosen)
    if gating == SOFTMAX_WEIGHT:
        weights = torch.softmax(weights, dim=-1)
    if norm_w:
        # clamped to the smallest normal f16 against a zero sum
        weights = weights / weights.sum(-1, keepdim=True).clamp(min=6.103515625e-5)
    if w_scale != 0.0 and w_scale != 1.0:
        weights = weights * w_scale
    return chosen, weights


def moe_ffn(x, e, n_used, gating, norm_w, w_scale, groups=(0, 0), act="silu", margins=None):
    """Sum over each token's chosen experts of weight * down(act(gate(x), up(x)))."""
    chosen, weights = select_experts(x, e, n_used, gating, norm_w, w_scale, groups, margins)
    out = torch.zeros_like(x)
    for t in range(x.shape[0]):
        for j in range(n_used):
            i = int(chosen[t, j])
            xt = x[t: t + 1]
            up = linear(xt, e.up[i], None if e.up_b is None else e.up_b[i])
            gate = linear(xt, e.gate[i], None if e.gate_b is None else e.gate_b[i])
            h = swiglu_oai(gate, up) if act == "swiglu_oai" else torch.nn.functional.silu(gate) * up
            y = linear(h, e.down[i], None if e.down_b is None else e.down_b[i])
            out[t] += weights[t, j] * y[0]
    return out
