#!/usr/bin/env python3
"""Slice 23's smooth starts (../README.md, "Slice 23"): copies of slice 19's
ordered start (a model folder, SRC) whose position table is a smooth random
code with the sinusoid's amplitude, written to OUT/smooth-a and OUT/smooth-b
(two draws), for runs that freeze it (`ape:scale=0.05,frozen=on`).

Each table is the sinusoid's shared part (the column means of posemb's `sin`
over rows 0-127) plus a smooth random part: slice 22's smooth code (every
column a Gaussian process over positions 0-511 with the squared-exponential
correlation), minus its own column means over rows 0-127, scaled so that its
RMS over rows 0-127 is the sinusoid's varying part's (0.466). The correlation's
lag-1 value is the mean cosine of neighbouring rows 0-127 of the sinusoid's
varying part (0.931), not of the whole table (0.970, which the shared part
raises), so that the table's neighbouring rows come out about as alike as the
sinusoid's. So over rows 0-127 the code has the sinusoid's shared part and
total RMS, and a varying part of the sinusoid's size and neighbour
similarity; what differs is that part's longer-range structure (distant rows
unrelated, where the sinusoid's are not). Draw a is default_rng(SEED)'s first draw, b its
second. Every other byte is the source's. Prints each start's numbers as
slice 22's make_codes.py does. Needs numpy; the tables repeat bit for bit under
run.sh's OpenBLAS settings (OPENBLAS_CORETYPE=Cooperlake, one thread), on which
numpy's eigh depends (without them about 11,000 entries move by up to 2.4e-7).
    python3 results/position-learning/slice23/make_smooth.py SRC OUT SEED"""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))  # results/: lab.py
from lab import module, st_header  # noqa: E402

M = module(os.path.join(HERE, "..", "slice22", "make_codes.py"), "make_codes")  # slice 22's codes and writer


def matched(sin, code):
    """code's part varying over rows 0-127, scaled to the sinusoid's varying RMS there, on the sinusoid's column means."""
    shared = sin[:M.ROWS].astype(np.float64).mean(0)
    vary = centred(code)
    return (shared + vary * (M.varying(sin) / M.varying(vary))).astype(np.float32)


def centred(t):
    """t minus its column means over rows 0-127."""
    return t - t[:M.ROWS].astype(np.float64).mean(0)


def lag(t, k):
    """The mean cosine of rows 0-127 k apart."""
    a = t[:M.ROWS].astype(np.float64)
    a = a / np.linalg.norm(a, axis=1, keepdims=True)
    return float(np.mean(np.sum(a[:-k] * a[k:], axis=1)))


def main(src, out, seed):
    rng = np.random.default_rng(int(seed))
    path = os.path.join(src, "model.safetensors")
    shape = tuple(M.place(path, M.TABLE, *st_header(path), lambda s: s[0] * s[1])[1])
    sin = M.sinusoid(*shape)
    for name in ("smooth-a", "smooth-b"):
        code, ell = M.smooth(shape[0], shape[1], M.neighbours(centred(sin)), rng)
        table = matched(sin, code)
        old = M.write(src, os.path.join(out, name), table)
        print(f"{out}/{name}: table RMS over rows 0-{M.ROWS - 1} {M.rms(old):.4f} -> {M.rms(table):.4f} (its part "
              f"varying with position {M.varying(table):.4f}, the sinusoid's {M.varying(sin):.4f}; x 0.05 enters at "
              f"{0.05 * M.rms(table):.5f}); mean cosine of neighbouring rows {M.neighbours(old):+.4f} -> "
              f"{M.neighbours(table):+.4f} (the sinusoid's {M.neighbours(sin):+.4f}; varying parts {M.neighbours(centred(table)):+.4f} "
              f"and {M.neighbours(centred(sin)):+.4f}; rows 8 apart {lag(table, 8):+.4f} and {lag(sin, 8):+.4f}; length "
              f"scale {ell:.3f}) (seed {seed})")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
