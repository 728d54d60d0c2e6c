#!/usr/bin/env python3
"""The "How far the boundary lies" figures of docs/study-position-learning-results.md: every
pretraining of a learned absolute PE added to the words that this notebook read at every kept
checkpoint (`posemb probe order`, SLICE/*.order_by_step.jsonl), the range of its word-order cost
over all of them, and the criterion on those axes (half of `rpe`'s final cost at the same recipe,
order_ablation.py's as the page's table gives it: its order.txt line, read by axes.py's cost).
Standard library only; run from anywhere."""
import os

from axes import cost
from phase import costs as curve

HERE = os.path.dirname(os.path.abspath(__file__))
# (what changed from the study's recipe, the APE runs' files, the rpe run of that recipe or None)
RUNS = [
    ("lr 3e-4", ["slice1/ape-lr3e-4", "slice21/lr3e-4/sin", "slice21/lr3e-4/lsin"], ("slice1/order.txt", "pl1-rpe/")),
    ("lr 1e-4", ["slice16/lr1e-4/ape", "slice21/lr1e-4/sin", "slice21/lr1e-4/lsin"],
     ("slice16/lr1e-4/order.txt", "/models/rpe/pretrain ")),
    ("7.8 times the text", ["slice2/ape-extra", "slice21/text-7.8x/sin", "slice21/text-7.8x/lsin"],
     ("slice2/order.txt", "pl2-rpe/")),
    ("a quarter of the text", ["slice16/text-0.25x/ape", "slice21/text-0.25x/sin", "slice21/text-0.25x/lsin"],
     ("slice16/text-0.25x/order.txt", "/models/rpe/pretrain ")),
    ("fixed factors 8 and 2.5", ["slice5/ape-scale8", "slice7/ape-scale2.5"], None),
    ("a table held at RMS 0.035", ["slice10/ape-rms"], None),
    ("pre-LN", ["slice11/ape", "slice11/sin", "slice11/lsin"], ("slice11/order.txt", "/models/rpe/pretrain ")),
    ("the corpus's vocabulary", ["slice12/ape", "slice12/sin", "slice12/lsin"], ("slice12/order.txt", "/models/rpe/pretrain ")),
    ("learned scales started at 0.05 and 0.088",
     ["slice14/sin_scale_0_05_learned_scale_on", "slice14/sin_scale_0_0883883_learned_scale_on"], None),
    ("a warm-up of half the run", ["slice15/ape", "slice15/sin", "slice21/warmup-1500/lsin"],
     ("slice15/order.txt", "/models/rpe/pretrain ")),
    ("width 64", ["slice13/w64/ape", "slice13/w64/sin", "slice13/w64/lsin"], ("slice13/w64/order.txt", "/models/rpe/pretrain ")),
    ("width 256", ["slice13/w256/ape", "slice13/w256/sin", "slice13/w256/lsin"], ("slice13/w256/order.txt", "/models/rpe/pretrain ")),
    ("24,000 steps over 7.8 times the text", ["slice18/ape-24k/ape"], ("slice18/rpe-24k/order.txt", "/models/rpe/pretrain ")),
    ("12,000 steps (sin, lsin)", ["slice18/sin-12k/sin", "slice18/sin-12k/lsin"], None),
]


def costs(name):
    """The word-order cost at each kept checkpoint (phase.py's reader), or None before the read-out."""
    read = os.path.exists(os.path.join(HERE, name + ".order_by_step.jsonl"))
    return [c for _, c in curve(name)] if read else None


lo, hi, n, half = None, None, 0, []
for axis, apes, rpe in RUNS:
    got = [(a, costs(a)) for a in apes]
    if any(c is None for _, c in got):
        print("%-42s not read yet" % axis)
        continue
    for a, c in got:
        n += 1
        lo = min(c) if lo is None else min(lo, min(c))
        hi = max(c) if hi is None else max(hi, max(c))
    r = cost(*rpe) / 2 if rpe else None
    if r is not None:
        half.append(r)
    print("%-42s %s; half of rpe's %s" % (axis, ", ".join(
        "%s %+.4f to %+.4f" % (a.split("/")[-1], min(c), max(c)) for a, c in got), "%.3f" % r if r is not None else "-"))
print("%d pretrainings: word-order cost from %+.4f to %+.4f nats at every kept checkpoint; "
      "the criterion on these axes %.3f-%.3f" % (n, lo, hi, min(half), max(half)))
