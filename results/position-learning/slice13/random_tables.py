#!/usr/bin/env python3
"""The reference for slice 13's table read-out (indicators.sh): the same indicators on tables
that learned nothing. For each width (64, 256) it draws 20 tables [512, width] of N(0, 0.02)
(BERT's initialiser; numpy's default_rng, seeds 1-20), runs `posemb analyze --tensor table
--len 128` on each, and prints per width the range (min, max) over the draws of the similarity's
TI, MONO and SYM, the 5-fold regression probe's mean |error| and the order-of-two probe's error,
beside each trained table of WIDTH/PE.indicators.json (PE: ape). Needs numpy.
    python3 results/position-learning/slice13/random_tables.py POSEMB"""
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
DRAWS = 20


def write_table(path, t):
    """t as the one tensor "table" of a safetensors file."""
    t = t.astype("<f4")
    head = json.dumps({"table": {"dtype": "F32", "shape": list(t.shape), "data_offsets": [0, t.nbytes]}}).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head + t.tobytes())


def read(ind):
    s = ind["similarity"]
    return {"TI": s["ti"], "MONO": s["mono"], "SYM": s["sym"], "regression (5-fold)": ind["regress_cv"]["mae"],
            "order of two": ind["relative"]["error"]}


def analyze(posemb, path, out):
    subprocess.run([posemb, "analyze", path, "--tensor", "table", "--len", "128", "--no-figures", "--threads", "1",
                    "--out", out], check=True, stdout=subprocess.DEVNULL)
    with open(os.path.join(out, "indicators.json")) as f:
        return read(json.load(f))


def main(posemb):
    with tempfile.TemporaryDirectory() as tmp:
        for width, folder in ((64, "w64"), (256, "w256")):
            draws = []
            for seed in range(1, DRAWS + 1):
                path = os.path.join(tmp, "t.safetensors")
                write_table(path, np.random.default_rng(seed).standard_normal((512, width)) * 0.02)
                draws.append(analyze(posemb, path, os.path.join(tmp, "a")))
            with open(os.path.join(HERE, folder, "ape.indicators.json")) as f:
                trained = read(json.load(f))
            print(f"width {width}: {DRAWS} random N(0, 0.02) tables (min - max) | the trained ape")
            for k in draws[0]:
                print(f"  {k}: {min(d[k] for d in draws):.3f} - {max(d[k] for d in draws):.3f} | {trained[k]:.3f}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
