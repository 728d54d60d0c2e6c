#!/usr/bin/env python3
"""Slice 20's third starting model (../README.md, "Slice 20"): a copy of
slice 19's ordered start (a model folder) in OUT whose position table is
replaced by a fresh draw, never trained: numpy's default_rng(SEED) standard
normals over the whole table, scaled so that its RMS over rows 0-127 equals
the source table's there (the positions enter at that RMS times the fixed
factor). Every other byte is the source's. Prints the RMS before and after
and the mean cosine of neighbouring rows 0-127 (source and fresh). Needs
numpy.
    python3 results/position-learning/slice20/make_fresh.py SRC OUT SEED"""
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "slice19"))
from make_inits import ROWS, TABLE, copy_model, place  # noqa: E402  (slice 19's checked offsets)


def rms(t):
    return float(np.sqrt(np.mean(t[:ROWS].astype(np.float64) ** 2)))


def neighbours(t):
    """Mean cosine of rows x and x + 1 over rows 0-127."""
    a, b = t[:ROWS - 1].astype(np.float64), t[1:ROWS].astype(np.float64)
    return float(np.mean(np.sum(a * b, 1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)))


def main(src, out, seed):
    tmp = out + ".tmp"
    path, h, base = copy_model(src, out)
    at, shape = place(path, TABLE, h, base, lambda s: s[0] * s[1])
    with open(path, "r+b") as f:
        f.seek(at)
        old = np.frombuffer(f.read(shape[0] * shape[1] * 4), dtype="<f4").reshape(shape).copy()
        new = np.random.default_rng(int(seed)).standard_normal(shape)
        new = (new * (rms(old) / rms(new))).astype("<f4")
        f.seek(at)
        f.write(new.tobytes())
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    print(f"{out}: table RMS over rows 0-{ROWS - 1} {rms(old):.4f} -> {rms(new):.4f}; mean cosine of neighbouring "
          f"rows {neighbours(old):+.4f} -> {neighbours(new):+.4f} (seed {seed})")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
