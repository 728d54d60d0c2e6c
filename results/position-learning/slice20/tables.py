#!/usr/bin/env python3
"""Slice 20's tables (reported, as its plan asks): for each run's final model
and each start, the table's TI, MONO, SYM and probes by `posemb analyze --len
128` (slice 19's reader), its RMS over rows 0-127 and that RMS times the fixed
factor 0.713 (the runs have no learned scale), so that one sees whether
fixed-factor's learnable table grows, shrinks or reorders, and that the frozen
tables end as they started.
    python3 results/position-learning/slice20/tables.py POSEMB RUNS
POSEMB: the program that ran slice 20; RUNS: its folder of runs (RUNS/NAME and
RUNS/inits/{ordered,shuffled,fresh}). A run without a final model is skipped."""
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))  # results/: lab.py
from lab import module  # noqa: E402

T19 = module(os.path.join(HERE, "..", "slice19", "tables.py"), "tables19")  # it imports slice 18's "tables"

FACTOR = 0.713
MODELS = ("inits/ordered", "inits/shuffled", "inits/fresh") + tuple(
    f"{a}-s{s}" for s in (1, 2) for a in ("frozen-ordered", "frozen-shuffled", "frozen-fresh", "fixed-factor"))


def rms(model):
    """RMS of the position table's rows 0-127 of a model folder."""
    t = T19.RT.tensors(os.path.join(model, "model.safetensors"), ["bert.embeddings.position_embeddings.weight"])
    return float(np.sqrt(np.mean(t["bert.embeddings.position_embeddings.weight"][:128].astype(np.float64) ** 2)))


def main(posemb, runs):
    print(f"model | TI MONO SYM regression order-of-two | RMS(rows 0-127) RMS*{FACTOR}")
    for name, model, ind in T19.rows(posemb, runs, MODELS):
        r = rms(model)
        print(f"{name} | " + " ".join(f"{v:.4f}" for v in ind.values()) + f" | {r:.4f} {r * FACTOR:.5f}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
