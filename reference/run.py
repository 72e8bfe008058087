#!/usr/bin/env python3
"""PyTorch reference forward pass over a model's GGUF files: the hidden state after every block and
the logits, for a prompt processed in one causal batch, in f32.

  /usr/bin/python3 reference/run.py --artifacts model.gguf --tokens 1,2,3 --out dir
  echo '{"artifacts": ["embed.gguf", "blk-0-2.gguf", "head.gguf"], "tokens": [1, 2, 3], "out": "dir"}' | /usr/bin/python3 reference/run.py

Writes dir/hidden-<block>.npy ([n_tokens, n_embd] after block <block>, zero-padded to 3 digits),
dir/logits.npy ([n_tokens, n_vocab]) and dir/summary.json (arch, shapes, files).
"""
import argparse
import json
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ beside the sources
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import torch  # noqa: E402

from model import Model  # noqa: E402


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--artifacts", nargs="+", help="GGUF files of one model: an artifact set or one whole-model GGUF")
    ap.add_argument("--tokens", help="comma-separated token ids")
    ap.add_argument("--out", help="directory for the .npy files (created if absent)")
    ap.add_argument("--f16-attention", action="store_true",
                    help="attention as llama.cpp's CPU flash attention over an f16 KV cache (f16 Q/K/V, V summed in f16); default: all f32")
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    if args.artifacts is None and not sys.stdin.isatty():
        spec = json.load(sys.stdin)
        args.artifacts, args.out = spec["artifacts"], spec.get("out", args.out)
        args.tokens = ",".join(str(t) for t in spec["tokens"])
        args.threads = int(spec.get("threads", args.threads))
        args.f16_attention = bool(spec.get("f16Attention", args.f16_attention))
    if not args.artifacts or not args.tokens or not args.out:
        ap.error("needs --artifacts, --tokens and --out (or the same as JSON on stdin)")
    return args


def main(argv):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    tokens = [int(t) for t in args.tokens.split(",") if t.strip() != ""]
    model = Model(args.artifacts, f16_attention=args.f16_attention)
    os.makedirs(args.out, exist_ok=True)
    files = []

    def save(il, hidden):
        name = f"hidden-{il:03d}.npy"
        np.save(os.path.join(args.out, name), hidden.numpy().astype(np.float32))
        files.append(name)

    logits = model.run(tokens, on_block=save)
    np.save(os.path.join(args.out, "logits.npy"), logits.numpy().astype(np.float32))
    summary = {
        "arch": model.arch,
        "nLayer": model.n_layer,
        "nEmbd": model.n_embd,
        "nVocab": int(logits.shape[1]),
        "tokens": tokens,
        "f16Attention": model.f16_attention,
        # a tiny margin means a rounding difference elsewhere may pick another expert (a large, legitimate seam difference)
        "routerMargin": min(model.router_margins) if model.router_margins else None,
        "hidden": files,
        "logits": "logits.npy",
    }
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(json.dumps({k: summary[k] for k in ("arch", "nLayer", "nEmbd", "nVocab")}))


if __name__ == "__main__":
    main(sys.argv[1:])
