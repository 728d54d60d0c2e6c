#!/usr/bin/env python3
"""The fine-tunes' figure (issue 56, part 2): perplexity at the fine-tuning
length over the 400 steps of extend.jsonl, per decoder and factor (one panel
each), one series per scaling (plain RoPE, PI, NTK, dynamic NTK, YaRN,
llama3), the geometric mean over the three pretrainings at each read step
(step 0 is the scaling applied without training). DroPE is left out: it
recalibrates at 128 tokens, so its curve is read at another length. Writes
curves.csv beside this script (panel, series, x, y: the table `posemb plot
lines` reads), then
    posemb plot lines results/length/extend/curves.csv --markers --cols 2 \\
        --xlabel "fine-tuning step" --ylabel "perplexity at the new length" \\
        --out docs/images/extend_curves.png
(make long-context). Standard library only; run from anywhere."""
import collections
import json
import math
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # results/: lab.py
from lab import write_points  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NAMES = [("none", "plain RoPE"), ("linear", "PI (linear)"), ("ntk", "NTK"), ("dynamic", "dynamic NTK"),
         ("yarn", "YaRN"), ("llama3", "llama3")]
DECODERS = [("gpt2", "GPT-2"), ("llama", "Llama")]


def main():
    curves = collections.defaultdict(list)  # (task, factor, scaling) -> [curve_perplexity per seed]
    with open(os.path.join(HERE, "extend.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r["scaling"] == "drope":
                continue
            steps = r["curve_steps"]
            curves[(r["task"], r["factor"], r["scaling"])].append(dict(zip(steps, r["curve_perplexity"])))
    rows = []
    for task, decoder in DECODERS:
        for factor in (2, 4):
            panel = f"{decoder}, {factor}x ({128 * factor} tokens)"
            for scaling, name in NAMES:
                seeds = curves[(task, factor, scaling)]
                if len(seeds) != 3:
                    raise SystemExit(f"curves.py: {task} {scaling} {factor}x: {len(seeds)} fine-tunes, expected 3")
                for step in sorted(seeds[0]):
                    gm = math.exp(sum(math.log(s[step]) for s in seeds) / len(seeds))
                    rows.append((panel, name, step, f"{gm:.4f}"))
    out = os.path.join(HERE, "curves.csv")
    write_points(out, rows)
    for r in rows:
        if r[2] in (0, 400):
            print(*r, sep=" | ")


if __name__ == "__main__":
    main()
