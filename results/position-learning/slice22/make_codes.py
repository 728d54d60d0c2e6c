#!/usr/bin/env python3
"""Slice 22's starting models (../README.md, "Slice 22"): copies of slice 19's
ordered start (a model folder, SRC) whose position table is replaced by a code
training will not change (the runs freeze it), each written to OUT/NAME:

- sin: the fixed sinusoid posemb's `sin` computes at the table's width (128; interleaved:
  column 2i sin(x w_i), 2i + 1 cos(x w_i), w_i = 10000^(-2i/128)) times
  0.05 / 0.713, so that under the fixed factor 0.713 it enters exactly as
  slice 19's sinusoid arm (`sin:scale=0.05`) does, to float32 rounding;
- sin-shuffled: the same table with rows 0-127 permuted (default_rng(SEED));
- smooth: a smooth random code: every column an independent Gaussian process
  over positions 0-511 with the squared-exponential correlation
  exp(-(x - y)^2 / (2 l^2)), l chosen so that the correlation of neighbours
  equals the sinusoid's mean cosine of neighbouring rows 0-127; drawn by
  default_rng(SEED) and scaled to the sinusoid table's RMS over rows 0-127.

Every other byte is the source's. Prints, per start, the RMS over rows 0-127
and the mean cosine of neighbouring rows 0-127 (the source's too). Needs numpy.
    python3 results/position-learning/slice22/make_codes.py SRC OUT SEED"""
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # results/: lab.py
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "slice19"))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "slice20"))
from make_inits import ROWS, TABLE, copy_model, place  # noqa: E402  (slice 19's checked offsets)
from make_fresh import neighbours, rms  # noqa: E402
from lab import st_header  # noqa: E402

FACTOR, SIN_SCALE, BASE = 0.713, 0.05, 10000.0


def sinusoid(rows, width):
    """posemb's `sin` table (src/pe/sin.c, layout=interleaved), in float64."""
    x = np.arange(rows, dtype=np.float64)[:, None]
    w = BASE ** (-np.arange(0, width, 2, dtype=np.float64) / width)[None, :]
    t = np.empty((rows, width))
    t[:, 0::2], t[:, 1::2] = np.sin(x * w), np.cos(x * w)
    return t


def smooth(rows, width, neighbour, rng):
    """Columns drawn from a Gaussian process with squared-exponential correlation whose lag-1 value is neighbour."""
    ell = np.sqrt(-1.0 / (2.0 * np.log(neighbour)))
    x = np.arange(rows, dtype=np.float64)
    cov = np.exp(-((x[:, None] - x[None, :]) ** 2) / (2.0 * ell * ell))
    w, v = np.linalg.eigh(cov)  # cov is positive semi-definite; its tiny negative rounding clipped
    root = v * np.sqrt(np.clip(w, 0.0, None))
    return root @ rng.standard_normal((rows, width)), ell


def write(src, out, table):
    """A copy of model folder src in out with its position table replaced by table (float32)."""
    tmp = out + ".tmp"
    path, h, base = copy_model(src, out)
    at, shape = place(path, TABLE, h, base, lambda s: s[0] * s[1])
    if tuple(shape) != table.shape:
        sys.exit(f"make_codes.py: {path}: position table {shape}, not {table.shape}")
    with open(path, "r+b") as f:
        f.seek(at)
        old = np.frombuffer(f.read(shape[0] * shape[1] * 4), dtype="<f4").reshape(shape).copy()
        f.seek(at)
        f.write(table.astype("<f4").tobytes())
    shutil.rmtree(out, ignore_errors=True)
    os.replace(tmp, out)
    return old


def main(src, out, seed):
    rng = np.random.default_rng(int(seed))
    path = os.path.join(src, "model.safetensors")
    shape = tuple(place(path, TABLE, *st_header(path), lambda s: s[0] * s[1])[1])
    sin = sinusoid(*shape) * (SIN_SCALE / FACTOR)
    shuffled = sin.copy()
    shuffled[:ROWS] = sin[:ROWS][rng.permutation(ROWS)]
    code, ell = smooth(shape[0], shape[1], neighbours(sin), rng)
    code *= rms(sin) / rms(code)
    for name, table in (("sin", sin), ("sin-shuffled", shuffled), ("smooth", code)):
        old = write(src, os.path.join(out, name), table)
        print(f"{out}/{name}: table RMS over rows 0-{ROWS - 1} {rms(old):.4f} -> {rms(table):.4f} (enters at "
              f"{FACTOR * rms(table):.5f}); mean cosine of neighbouring rows {neighbours(old):+.4f} -> "
              f"{neighbours(table):+.4f}" + (f" (length scale {ell:.3f})" if name == "smooth" else "")
              + f" (seed {seed})")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
