#!/usr/bin/env python3
"""HF2's figure (issue 56, part 3): the share of q's and k's norm on each
rotation pair, fastest frequency first, for each rotary variant of slice 1
(one panel each): per model and head, each pair's mean norm over its sum
(usage/*/rotary_{q,k}.csv, as usage.py reads them), averaged over the 16
heads (4 layers x 4) and the 3 seeds. "even" is 1/16, a flat spread. Writes
pairs.csv beside this script (panel, series, x, y), then
    posemb plot lines results/length/frequencies/pairs.csv --markers --cols 2 \\
        --xlabel "rotation pair (1 = fastest)" --ylabel "share of the pair norms" \\
        --out docs/images/rope_pairs.png
(make long-context). Standard library only; run from anywhere."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))  # results/: lab.py
sys.path.insert(0, HERE)  # usage.py: the CSV reader
from lab import write_points  # noqa: E402
from usage import rows as read_rows  # noqa: E402

VARIANTS = [("rope", "rope (base 10,000)"), ("rope_base_500000", "rope:base=500000"),
            ("rope_p_0_75", "rope:p=0.75"), ("rope_p_0_25", "rope:p=0.25")]


def shares(path):
    """Each head's pair norms over their sum."""
    out = []
    for row in read_rows(path):
        total = sum(row)
        out.append([x / total for x in row])
    return out


def main():
    rows = []
    for name, panel in VARIANTS:
        for side in ("q", "k"):
            heads = []
            for seed in (1, 2, 3):
                heads += shares(os.path.join(HERE, "usage", f"llama-{name}-s{seed}", f"rotary_{side}.csv"))
            n = len(heads[0])
            for i in range(n):
                rows.append((panel, side, i + 1, f"{sum(h[i] for h in heads) / len(heads):.4f}"))
        rows += [(panel, "even", i + 1, f"{1 / n:.4f}") for i in range(n)]
    out = os.path.join(HERE, "pairs.csv")
    write_points(out, rows)


if __name__ == "__main__":
    main()
