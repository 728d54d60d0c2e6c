#!/usr/bin/env python3
"""Slice 19's starting models (../README.md, "Slice 19"): two copies of
slice 18's final `ape` model (a model folder: config.json, model.safetensors,
vocab.txt) in OUT/ordered and OUT/shuffled, whose learned position scale is
set to SCALE (the table then enters at RMS SCALE x the table's RMS over the
128 trained rows), and in OUT/shuffled the table's rows 0-127 permuted
(numpy's default_rng(SEED)): the same values and RMS, no order. Every other
byte is the source's. Prints each folder's table RMS, scale and the
permutation's first entries. Needs numpy.
    python3 results/position-learning/slice19/make_inits.py SRC OUT SCALE SEED"""
import os
import shutil
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # results/: lab.py
from lab import st_header  # noqa: E402

TABLE, SCALE = "bert.embeddings.position_embeddings.weight", "bert.embeddings.position_scale"
ROWS = 128  # the positions pretraining used


def place(path, name, h, base, want):
    """(file offset, shape) of float32 tensor name, checked against the expected element count."""
    t = h.get(name)
    if not t or t["dtype"] != "F32":
        sys.exit(f"make_inits.py: {path}: no float32 tensor {name}")
    a, b = t["data_offsets"]
    if (b - a) // 4 != want(t["shape"]):
        sys.exit(f"make_inits.py: {path}: {name} has shape {t['shape']}")
    return base + a, t["shape"]


def copy_model(src, out):
    """Copies model folder src to out.tmp (the caller renames it to out); returns (its model.safetensors, header, data base)."""
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for f in ("config.json", "model.safetensors", "vocab.txt"):
        shutil.copy(os.path.join(src, f), os.path.join(tmp, f))
    path = os.path.join(tmp, "model.safetensors")
    return (path, *st_header(path))


def make(src, out, scale, perm):
    tmp = out + ".tmp"
    path, h, base = copy_model(src, out)
    at_t, shape = place(path, TABLE, h, base, lambda s: s[0] * s[1])
    at_s, _ = place(path, SCALE, h, base, lambda s: 1)
    with open(path, "r+b") as f:
        f.seek(at_t)
        table = np.frombuffer(f.read(shape[0] * shape[1] * 4), dtype="<f4").reshape(shape).copy()
        if perm is not None:
            table[:ROWS] = table[:ROWS][perm]
            f.seek(at_t)
            f.write(table.astype("<f4").tobytes())
        f.seek(at_s)
        f.write(struct.pack("<f", scale))
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    rms = float(np.sqrt(np.mean(table[:ROWS].astype(np.float64) ** 2)))
    print(f"{out}: table RMS over rows 0-{ROWS - 1} {rms:.4f}, scale {scale:.4f}, entering at {rms * scale:.4f}"
          + (f", rows permuted (first: {' '.join(map(str, perm[:8]))} ...)" if perm is not None else ""))


def main(src, out, scale, seed):
    scale = float(scale)
    make(src, os.path.join(out, "ordered"), scale, None)
    make(src, os.path.join(out, "shuffled"), scale, np.random.default_rng(int(seed)).permutation(ROWS))


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
