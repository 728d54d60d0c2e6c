#!/usr/bin/env python3
"""Slice 22's starting models (../README.md, "Slice 22"): copies of slice 19's
ordered start (a model folder, SRC) whose position table is replaced by a code
the runs freeze (`ape:scale=0.05,frozen=on`), each written to OUT/NAME:

- sin: the fixed sinusoid exactly as posemb's `sin` computes its rows
  (src/pe/sinusoid.c: frequency m = 10000^(-2m/128) in double, column 2m
  float(sin(m's frequency x)), 2m + 1 float(cos(...)), x the position), so
  that under the factor 0.05 the model adds the bits slice 19's sinusoid arm
  (`sin:scale=0.05`) adds;
- sin-shuffled: that table with rows 0-127 permuted (default_rng(SEED));
- sin-rotated: that table times a random orthogonal matrix (default_rng(SEED),
  drawn after the permutation: the QR factor of a standard normal matrix, its
  columns' signs fixed by R's diagonal): every row's norm, every cosine between
  rows and the order kept, the columns mixed;
- smooth: a smooth random code, every column an independent Gaussian process
  over positions 0-511 with the squared-exponential correlation whose value at
  lag 1 is the sinusoid's mean cosine of neighbouring rows 0-127 (drawn after
  the rotation), scaled to the sinusoid's RMS over rows 0-127.

Every other byte is the source's. Prints, per start, the RMS over rows 0-127,
the RMS of the part that varies with position (each column minus its mean over
rows 0-127), and the mean cosine of neighbouring rows 0-127. Needs numpy.
    python3 results/position-learning/slice22/make_codes.py SRC OUT SEED"""
import math
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

BASE = 10000.0


def sinusoid(rows, width):
    """posemb's `sin` rows (layout=interleaved), float32, computed as src/pe/sinusoid.c computes them."""
    t = np.empty((rows, width), dtype=np.float32)
    for m in range(width // 2):
        f = math.pow(BASE, -2.0 * m / width)
        for x in range(rows):
            t[x, 2 * m], t[x, 2 * m + 1] = math.sin(f * x), math.cos(f * x)
    return t


def rotation(width, rng):
    """A random orthogonal matrix: Q of a standard normal matrix's QR, Q's columns signed by R's diagonal."""
    q, r = np.linalg.qr(rng.standard_normal((width, width)))
    return q * np.sign(np.diag(r))[None, :]


def smooth(rows, width, neighbour, rng):
    """Columns drawn from a Gaussian process with squared-exponential correlation whose lag-1 value is neighbour."""
    ell = math.sqrt(-1.0 / (2.0 * math.log(neighbour)))
    x = np.arange(rows, dtype=np.float64)
    cov = np.exp(-((x[:, None] - x[None, :]) ** 2) / (2.0 * ell * ell))
    w, v = np.linalg.eigh(cov)  # cov is positive semi-definite; its tiny negative rounding clipped
    return (v * np.sqrt(np.clip(w, 0.0, None))) @ rng.standard_normal((rows, width)), ell


def varying(t):
    """RMS over rows 0-127 of the table minus its column means there: the part that changes with position."""
    a = t[:ROWS].astype(np.float64)
    return float(np.sqrt(np.mean((a - a.mean(0)) ** 2)))


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
    sin = sinusoid(*shape)
    shuffled = sin.copy()
    shuffled[:ROWS] = sin[:ROWS][rng.permutation(ROWS)]
    rotated = (sin.astype(np.float64) @ rotation(shape[1], rng)).astype(np.float32)
    code, ell = smooth(shape[0], shape[1], neighbours(sin), rng)
    code = (code * (rms(sin) / rms(code))).astype(np.float32)
    for name, table in (("sin", sin), ("sin-shuffled", shuffled), ("sin-rotated", rotated), ("smooth", code)):
        old = write(src, os.path.join(out, name), table)
        print(f"{out}/{name}: table RMS over rows 0-{ROWS - 1} {rms(old):.4f} -> {rms(table):.4f} (its part varying "
              f"with position {varying(table):.4f}; x 0.05 enters at {0.05 * rms(table):.5f}); mean cosine of "
              f"neighbouring rows {neighbours(old):+.4f} -> {neighbours(table):+.4f}"
              + (f" (length scale {ell:.3f})" if name == "smooth" else "") + f" (seed {seed})")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
