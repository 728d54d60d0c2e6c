#!/usr/bin/env python3
"""Slice 18's table read-out (descriptive, read after H18.1 and H18.2 were
judged; no hypothesis was fixed for it), as slice 13's indicators.sh and
random_tables.py read width 64 and 256: `posemb analyze` (no figures, the 128
positions pretraining used, one thread) on `ape`'s final model at 24,000
steps, written as ape-24k/ape.indicators.json; its similarity indicators at
every kept checkpoint (`posemb analyze --evolution`) as ape-24k/ape.evolution.csv;
then the same indicators on 20 tables [512, 128] of N(0, 0.02) that learned
nothing (BERT's initialiser; numpy's default_rng, seeds 1-20), printed as
ranges beside the trained table, with its RMS over rows 0-127 and its learned
scale, and both at every kept checkpoint. Files are written whole, then
renamed. Needs numpy.
    python3 results/position-learning/slice18/tables.py POSEMB RUN
POSEMB: the program that ran the pretraining; RUN: its run folder (RUN/models/ape/pretrain)."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "slice13"))
sys.path.insert(0, os.path.join(HERE, "..", ".."))  # results/: lab.py
import random_tables as RT  # noqa: E402  (slice 13's reference: the table writer, the reader, the indicators)
from lab import st_header  # noqa: E402

OUT = os.path.join(HERE, "ape-24k")


def keep(src, name):
    shutil.copy(src, os.path.join(OUT, name + ".tmp"))
    os.replace(os.path.join(OUT, name + ".tmp"), os.path.join(OUT, name))


def amplitude(model):
    """(RMS of the table's rows 0-127, the learned scale, or None for a model with a fixed factor) of a model folder."""
    path, table, scale = os.path.join(model, "model.safetensors"), "bert.embeddings.position_embeddings.weight", \
        "bert.embeddings.position_scale"
    t = RT.tensors(path, [table] + ([scale] if scale in st_header(path)[0] else []))
    rms = float(np.sqrt(np.mean(t[table][:128].astype(np.float64) ** 2)))
    return rms, float(t[scale][0]) if scale in t else None


def main(posemb, run):
    model = os.path.join(run, "models", "ape", "pretrain")
    with tempfile.TemporaryDirectory() as tmp:
        common = ["--len", "128", "--no-figures", "--threads", "1"]
        subprocess.run([posemb, "analyze", model, *common, "--out", os.path.join(tmp, "final")], check=True,
                       stdout=subprocess.DEVNULL)
        keep(os.path.join(tmp, "final", "indicators.json"), "ape.indicators.json")
        subprocess.run([posemb, "analyze", model, "--evolution", *common, "--out", os.path.join(tmp, "evolution")],
                       check=True, stdout=subprocess.DEVNULL)
        keep(os.path.join(tmp, "evolution", "evolution.csv"), "ape.evolution.csv")
        draws = []
        for seed in range(1, RT.DRAWS + 1):
            path = os.path.join(tmp, "t.safetensors")
            RT.write_table(path, np.random.default_rng(seed).standard_normal((512, 128)) * 0.02)
            draws.append(RT.analyze(posemb, path, os.path.join(tmp, "a")))
    with open(os.path.join(OUT, "ape.indicators.json")) as f:
        trained = RT.read(json.load(f))
    print(f"width 128: {RT.DRAWS} random N(0, 0.02) tables (min - max) | ape at 24,000 steps over 7.8x the text")
    for k in draws[0]:
        print(f"  {k}: {min(d[k] for d in draws):.4f} - {max(d[k] for d in draws):.4f} | {trained[k]:.4f}")
    rms, scale = amplitude(model)
    print(f"  the trained table: RMS over rows 0-127 {rms:.4f} (random: 0.02), learned scale {scale:.4f}")
    print("by kept checkpoint: STEP RMS SCALE RMS*|SCALE| (the amplitude the positions enter the first layer at)")
    steps = sorted(int(d.split("-")[1]) for d in os.listdir(model) if d.startswith("checkpoint-"))
    for step in steps:
        rms, scale = amplitude(os.path.join(model, f"checkpoint-{step}"))
        print(f"  {step} {rms:.4f} {scale:+.4f} {rms * abs(scale):.5f}")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(*sys.argv[1:])
