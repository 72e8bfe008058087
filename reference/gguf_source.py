"""Tensors and metadata from one model's GGUF files (an artifact set or one whole model).

GGUFs are read with the gguf-py that ships inside node-llama-cpp's llama.cpp bundle, so the
reference decodes quantized weights exactly as the llama.cpp our oracle runs (no pip install).
"""
import os
import subprocess
import sys

import numpy as np
import torch

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUNDLE = os.path.join(REPO, "node_modules", "node-llama-cpp", "llama", "gitRelease.bundle")
CACHE = os.path.join(REPO, "node_modules", ".cache", "neuron-llama-src")


def gguf_py_dir():
    """gguf-py from the llama.cpp bundle, checked out once into node_modules/.cache."""
    override = os.environ.get("NEURON_GGUF_PY")
    if override:
        return override
    target = os.path.join(CACHE, "gguf-py")
    if os.path.isdir(os.path.join(target, "gguf")):
        return target
    if not os.path.isfile(BUNDLE):
        sys.exit(f"reference: {BUNDLE} is missing; run `npm ci` (node-llama-cpp ships llama.cpp's sources there)")
    staging = f"{CACHE}.partial-{os.getpid()}"
    # a local bundle: no network; only gguf-py is checked out (the clone's own index, not ours)
    subprocess.run(["git", "clone", "-q", "--no-checkout", BUNDLE, staging], check=True)
    subprocess.run(["git", "-C", staging, "checkout", "-q", "HEAD", "--", "gguf-py"], check=True)
    os.makedirs(os.path.dirname(CACHE), exist_ok=True)
    try:
        os.rename(staging, CACHE)
    except OSError:  # another process won the race; use its checkout
        subprocess.run(["rm", "-rf", staging], check=False)
    return target


sys.path.insert(0, gguf_py_dir())
import gguf  # noqa: E402
from gguf.quants import dequantize  # noqa: E402


class ModelSource:
    """Metadata from the first file (every artifact carries the full metadata); each tensor from
    whichever file holds it."""

    def __init__(self, paths):
        if not paths:
            raise ValueError("no GGUF files given")
        self.readers = [gguf.GGUFReader(p) for p in paths]
        self.fields = self.readers[0].fields
        self.tensors = {}
        for reader in self.readers:
            for t in reader.tensors:
                self.tensors.setdefault(t.name, t)
        self.arch = self.get("general.architecture")

    def get(self, key, default=None):
        field = self.fields.get(key)
        if field is None:
            return default
        return field.contents()

    def hp(self, name, default=None):
        """An architecture-prefixed key: hp('block_count') reads '<arch>.block_count'."""
        return self.get(f"{self.arch}.{name}", default)

    def has(self, name):
        return name in self.tensors

    def tensor(self, name):
        """f32 torch tensor in llama.cpp's row-major view: a [n_in, n_out] ggml weight is [n_out, n_in]."""
        t = self.tensors.get(name)
        if t is None:
            raise KeyError(f"tensor {name} is in none of the given files; pass the artifact that holds it")
        data = np.array(dequantize(t.data, t.tensor_type), dtype=np.float32)  # a writable copy
        shape = tuple(int(d) for d in reversed(t.shape.tolist()))
        return torch.from_numpy(np.ascontiguousarray(data.reshape(shape)))

    def optional(self, name):
        return self.tensor(name) if self.has(name) else None
