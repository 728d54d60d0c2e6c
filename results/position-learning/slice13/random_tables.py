#!/usr/bin/env python3
"""The reference for slice 13's table read-out (indicators.sh): the same indicators on tables
that learned nothing. For each width (64, 256) it draws 20 tables [512, width] of N(0, 0.02)
(BERT's initialiser; numpy's default_rng, seeds 1-20), runs `posemb analyze --tensor table
--len 128` on each, and prints per width the range (min, max) over the draws of the similarity's
TI, MONO and SYM, the 5-fold regression probe's mean |error| and the order-of-two probe's error,
beside each trained table of WIDTH/PE.indicators.json (PE: ape). Given the run folders (their
RUN/models/ape/pretrain/model.safetensors), also the trained tables' RMS over the 128 trained rows
and their learned scale: the order-of-two probe's fit is penalised (L2), so its error depends on a
table's size, which the random tables match only where the RMS is near 0.02 (posemb analyze reads
the table without the scale). Needs numpy.
    python3 results/position-learning/slice13/random_tables.py POSEMB [RUN64 RUN256]"""
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


def tensors(path, names):
    """{name: array} of the named tensors of a safetensors file (F32)."""
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        head = json.loads(f.read(n))
        out = {}
        for name in names:
            a, b = head[name]["data_offsets"]
            f.seek(8 + n + a)
            out[name] = np.frombuffer(f.read(b - a), dtype="<f4").reshape(head[name]["shape"])
        return out


def main(posemb, runs):
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
            if runs:
                t = tensors(os.path.join(runs[folder], "models", "ape", "pretrain", "model.safetensors"),
                            ["bert.embeddings.position_embeddings.weight", "bert.embeddings.position_scale"])
                table = t["bert.embeddings.position_embeddings.weight"][:128]
                print(f"  the trained table: RMS over rows 0-127 {np.sqrt(np.mean(table ** 2)):.4f} (random: 0.02), "
                      f"learned scale {t['bert.embeddings.position_scale'][0]:.4f}")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 4):
        sys.exit(__doc__)
    main(sys.argv[1], dict(zip(("w64", "w256"), sys.argv[2:])))
