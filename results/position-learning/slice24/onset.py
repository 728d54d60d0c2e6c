#!/usr/bin/env python3
"""The onset figure of docs/study-position-learning-results.md: word-order cost over 24,000 steps
over 7.8 times the text (`posemb probe order` at every kept checkpoint) for BERT's own APE
(`ape:scale=1`, slice 24's two draws), the study's `ape` with its learned scale and `rpe` (slice
18), and half of `rpe`'s cost at each kept step (the criterion is half of its final cost).
Writes onset.csv beside this script (panel, series, x, y), which `make position-learning` draws:
    posemb plot lines results/position-learning/slice24/onset.csv --markers --cols 1 \\
        --xlabel "pretraining step" --ylabel "word-order cost (nats per masked token)" \\
        --out docs/images/position_learning_onset.png
Standard library only; run from anywhere."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "..", ".."))  # results/: lab.py
from lab import write_points  # noqa: E402
from phase import costs  # noqa: E402  (SLICE/NAME.order_by_step.jsonl as [(step, cost)])

PANEL = "24,000 steps over 7.8x the text"
SERIES = [("ape x1, no learned scale (BERT's), draw 1", "slice24/s1/ape_scale_1"),
          ("ape x1, no learned scale (BERT's), draw 2", "slice24/s2/ape_scale_1"),
          ("ape with the study's learned scale", "slice18/ape-24k/ape"),
          ("rpe", "slice18/rpe-24k/rpe")]


def main():
    rows = []
    for label, name in SERIES:
        rows += [(PANEL, label, step, f"{c:.6g}") for step, c in costs(name)]
    rows += [(PANEL, "half of rpe's at each step", step, f"{c / 2:.6g}") for step, c in costs("slice18/rpe-24k/rpe")]
    write_points(os.path.join(HERE, "onset.csv"), rows, lineterminator="\n")
    print(f"wrote {os.path.join(HERE, 'onset.csv')} ({len(rows)} points)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
