#!/usr/bin/env python3
"""Slice 23's tables (reported, as its plan asks): for the start and each final
model of the learnable-table arms, the table's TI, MONO, SYM and probes by
`posemb analyze --len 128` (slice 19's reader), its RMS over rows 0-127, the
factor it enters with (the learned scale, or the fixed 0.713 where the model
has none) and their product, so that one sees whether each table orders itself
and what amplitude it reaches the words with.
    python3 results/position-learning/slice23/tables.py POSEMB ORDERED RUNS
POSEMB: the program that ran slice 23; ORDERED: slice 19's ordered start; RUNS:
its folder of runs (RUNS/NAME). A run without a final model is skipped."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))  # results/: lab.py
from lab import module  # noqa: E402

T19 = module(os.path.join(HERE, "..", "slice19", "tables.py"), "tables19")  # it imports slice 18's "tables"

FIXED = 0.713  # fixed-factor-8k's factor (`ape:scale=0.713`): its model stores no scale
RUNS = tuple(f"{a}-s{s}" for a in ("fixed-factor-8k", "learned-scale-8k") for s in (1, 2))


def main(posemb, ordered, runs):
    print("model | TI MONO SYM regression order-of-two | RMS(rows 0-127) factor RMS*|factor|")
    start = [("start (slice 19's ordered)", ordered, ind) for _, _, ind in T19.rows(posemb, os.path.dirname(ordered),
                                                                                    (os.path.basename(ordered),))]
    for name, model, ind in start + list(T19.rows(posemb, runs, RUNS)):
        rms, scale = T19.amplitude(model)  # slice 18's reader
        factor = FIXED if scale is None else scale
        print(f"{name} | " + " ".join(f"{v:.4f}" for v in ind.values())
              + f" | {rms:.4f} {factor:+.4f} {rms * abs(factor):.5f}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
