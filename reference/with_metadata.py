#!/usr/bin/env python3
"""Copies a GGUF with metadata keys added or replaced, tensors untouched: a test makes a YaRN
variant of a generated model this way (the generator writes no rope scaling).

  /usr/bin/python3 reference/with_metadata.py in.gguf out.gguf --set deepseek2.rope.scaling.type str yarn --set deepseek2.rope.scaling.factor f32 4
"""
import argparse
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from gguf_source import gguf  # noqa: E402  (gguf-py from the llama.cpp bundle)

TYPES = {
    "str": (gguf.GGUFValueType.STRING, str),
    "f32": (gguf.GGUFValueType.FLOAT32, float),
    "u32": (gguf.GGUFValueType.UINT32, int),
    "bool": (gguf.GGUFValueType.BOOL, lambda v: v == "true"),
}


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("input")
    ap.add_argument("output")
    ap.add_argument("--set", nargs=3, action="append", default=[], metavar=("KEY", "|".join(TYPES), "VALUE"))
    args = ap.parse_args(argv)
    new = {}
    for key, kind, value in args.set:
        if kind not in TYPES:
            ap.error(f"--set {key}: type must be one of {', '.join(TYPES)}, not {kind}")
        new[key] = (TYPES[kind][0], TYPES[kind][1](value))
    reader = gguf.GGUFReader(args.input)
    writer = gguf.GGUFWriter(args.output, reader.get_field("general.architecture").contents())
    for field in reader.fields.values():
        if field.name == "general.architecture" or field.name.startswith("GGUF.") or field.name in new:
            continue  # the writer adds the first two itself
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), kind, sub_type=sub)
    for key, (kind, value) in new.items():
        writer.add_key_value(key, value, kind)
    for t in reader.tensors:
        writer.add_tensor_info(t.name, t.data.shape, t.data.dtype, t.data.nbytes, t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    for t in reader.tensors:
        writer.write_tensor_data(t.data)
    writer.close()


if __name__ == "__main__":
    main(sys.argv[1:])
