#!/usr/bin/env python3
"""The phase figure of issue 51: word-order cost over pretraining steps for
every pretraining of slices 1-15 whose checkpoints were read by `posemb probe
order` (SLICE/*.order_by_step.jsonl), one panel per axis tried, `rpe` at the
study's recipe (slice 4's draw, lr 1e-3, 3000 steps) in grey in every panel.
Writes phase.csv beside this script (panel, series, x, y: the long table
`posemb plot lines` reads); then
    posemb plot lines results/position-learning/phase.csv --reference "rpe, the study's recipe (draw 2)" \\
        --markers --cols 3 --xlabel "pretraining step" --ylabel "word-order cost (nats per masked token)" \\
        --out docs/images/position_learning.png
Standard library only; run from anywhere."""
import csv
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
REFERENCE = "rpe, the study's recipe (draw 2)"

# (panel, series, file); panels in the figure's order, each its series in the legend's.
PANELS = [
    ("lr 3e-4 (3000 steps)", [("ape", "slice1/ape-lr3e-4"), ("rpe", "slice1/rpe-lr3e-4")]),
    ("7.8x the text (3000 steps)", [("ape", "slice2/ape-extra"), ("rpe", "slice2/rpe-extra")]),
    # slice 18's 24,000 steps are not drawn here: the panels share their x axis, which would then squeeze every
    # other run into its first eighth; its final cost is in the axes figure (axes.py), its steps in the notebook
    ("a fixed factor on the PE (3000 steps)", [("ape x8", "slice5/ape-scale8"), ("ape x2.5", "slice7/ape-scale2.5"),
                                           ("sin x1", "slice5/sin-fixed"), ("sin x0.05", "slice6/sin-fixed-0.05"),
                                           ("sin x0.05, draw 2", "slice6/sin-fixed-0.05-seed2"),
                                           ("ape held at RMS 0.035", "slice10/ape-rms")]),
    ("6000 steps", [("sin x0.05", "slice7/sin-fixed-0.05-6000"), ("sin x0.05, draw 2",
                                                                   "slice8/sin-fixed-0.05-6000-seed2"),
                    ("sin x0.05, draw 3", "slice9/sin-fixed-0.05-6000-seed3"),
                    ("rpe", "slice7/rpe-6000"), ("rpe, draw 2", "slice8/rpe-6000-seed2")]),
    ("pre-LN; an 8k vocabulary (3000 steps)",
     [("ape, pre-LN", "slice11/ape"), ("sin, pre-LN", "slice11/sin"), ("lsin, pre-LN", "slice11/lsin"),
      ("rpe, pre-LN", "slice11/rpe"), ("ape, 8k vocabulary", "slice12/ape"), ("sin, 8k vocabulary", "slice12/sin"),
      ("lsin, 8k vocabulary", "slice12/lsin"), ("rpe, 8k vocabulary", "slice12/rpe")]),
    ("learned scale: start, warm-up (3000 steps)",
     [("sin from 0.05", "slice14/sin_scale_0_05_learned_scale_on"),
      ("sin from 0.088 (Cramming)", "slice14/sin_scale_0_0883883_learned_scale_on"),
      ("ape, warm-up 1500", "slice15/ape"), ("sin, warm-up 1500", "slice15/sin"), ("rpe, warm-up 1500", "slice15/rpe")]),
    # the widths' own rpe (4.03 and 5.83 nats at 3000) are in the table: a figure draws at most 40 lines
    ("width 64 (3000 steps)", [(pe, "slice13/w64/" + pe) for pe in ("ape", "sin", "lsin")]),
    ("width 256, BERT-Mini's (3000 steps)", [(pe, "slice13/w256/" + pe) for pe in ("ape", "sin", "lsin")]),
    ("positions in the logits (TUPE, 3000 steps)", [("tupe", "slice3/tupe"), ("tupe, draw 2", "slice4/tupe-seed2"),
                                                     ("tupe layer 0", "slice3/tupe-layer0"),
                                                     ("tupe layer 0, draw 2", "slice4/tupe-layer0-seed2")]),
]
REFERENCE_FILE = "slice4/rpe-seed2"


def costs(name):
    """[(step, order_cost)] of one pretraining's checkpoints, in step order."""
    out = []
    with open(os.path.join(HERE, name + ".order_by_step.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            out.append((int(re.search(r"checkpoint-(\d+)", r["model"]).group(1)), r["order_cost"]))
    return sorted(out)


def main():
    rows = [("panel", "series", "x", "y")]
    for panel, series in PANELS:
        for label, name in series:
            rows += [(panel, label, step, f"{c:.6g}") for step, c in costs(name)]
        if panel == "6000 steps":  # the criterion: half of rpe's mean cost over its two draws, step by step
            a, b = dict(costs("slice7/rpe-6000")), dict(costs("slice8/rpe-6000-seed2"))
            rows += [(panel, "half of rpe's (the criterion)", s, f"{(a[s] + b[s]) / 4:.6g}") for s in sorted(a)
                     if s in b]
    rows += [("", REFERENCE, step, f"{c:.6g}") for step, c in costs(REFERENCE_FILE)]
    tmp = os.path.join(HERE, "phase.csv.tmp")
    with open(tmp, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
    os.replace(tmp, os.path.join(HERE, "phase.csv"))
    print(f"wrote {os.path.join(HERE, 'phase.csv')} ({len(rows) - 1} points)")


if __name__ == "__main__":
    main()
