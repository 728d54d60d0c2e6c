#!/usr/bin/env python3
"""Slice 19's tables (reported, as its plan asks): for each `ape` run's final
model and its starting model, the table's TI, MONO, SYM and probes by `posemb
analyze --len 128` (rows 0-127, the positions pretraining used; slice 13's
reader), its RMS over rows 0-127 and the learned scale, so that one sees
whether the shuffled table orders itself again and how much of the ordered
one's order is kept. Slice 18's 20 random N(0, 0.02) tables of width 128
gave TI at most 0.012 and MONO at most 0.506 (slice18/tables.txt).
    python3 results/position-learning/slice19/tables.py POSEMB RUNS
POSEMB: the program that ran slice 19; RUNS: its folder of runs (RUNS/NAME,
RUNS/inits/ordered, RUNS/inits/shuffled). A run without a final model is
skipped."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "slice13"))
sys.path.insert(0, os.path.join(HERE, "..", "slice18"))
import random_tables as RT  # noqa: E402  (slice 13's reader of indicators.json)
from tables import amplitude  # noqa: E402  (slice 18's RMS and scale of a model folder)

MODELS = ("inits/ordered", "inits/shuffled", "ordered-s1", "shuffled-s1", "ordered-s2", "shuffled-s2")


def indicators(posemb, model, out):
    subprocess.run([posemb, "analyze", model, "--len", "128", "--no-figures", "--threads", "1", "--out", out],
                   check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "indicators.json")) as f:
        return RT.read(json.load(f))


def rows(posemb, runs, models):
    """(name, model folder, indicators) of each of models (names under runs) that has a final model."""
    with tempfile.TemporaryDirectory() as tmp:
        for name in models:
            model = os.path.join(runs, name)
            if os.path.exists(os.path.join(model, "model.safetensors")):
                yield name, model, indicators(posemb, model, os.path.join(tmp, name.replace("/", "-")))


def main(posemb, runs):
    print("model | TI MONO SYM regression order-of-two | RMS(rows 0-127) scale RMS*|scale|")
    for name, model, ind in rows(posemb, runs, MODELS):
        rms, scale = amplitude(model)
        print(f"{name} | " + " ".join(f"{v:.4f}" for v in ind.values())
              + f" | {rms:.4f} {scale:+.4f} {rms * abs(scale):.5f}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
