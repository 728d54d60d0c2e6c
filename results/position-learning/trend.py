#!/usr/bin/env python3
"""How far the boundary lies on the trend the longest runs show (docs/study-position-learning-results.md,
"How far the boundary lies"): for each of the longest pretrainings of a learned APE added to the words
(slice 18: `ape`, 24,000 steps over 7.8 times the text; `sin` and `lsin`, 12,000 steps), the word-order cost
at its kept checkpoints (`posemb probe order`, PE.order_by_step.jsonl) against log2 of the tokens seen;
the least-squares slope per doubling with its 95% interval (t over the checkpoints: they come from one
run, so the interval is narrower than a draw-to-draw one; it describes this run's trend, not a population);
and at the slope's upper bound, how many more doublings of the tokens seen the run would need to reach
the criterion at its text (half of `rpe`'s cost at 3000 steps on the same text: slice 2's 7.8x for
`ape`, the study's recipe for `sin`, `lsin`). Standard library only; run from anywhere."""
import math
import os
import statistics
import sys

from axes import cost, RECIPE
from phase import costs as curve

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))  # results/: lab.py
from lab import C  # noqa: E402  (scripts/claims: t_quantile)

TOKENS_PER_STEP = 32 * 128
RUNS = [  # (name, order_by_step base, criterion's rpe draws: their mean cost, halved, as axes.py draws it)
    ("ape, 24,000 steps, 7.8x the text", "slice18/ape-24k/ape", [("slice2/order.txt", "pl2-rpe/")]),
    ("sin, 12,000 steps", "slice18/sin-12k/sin", RECIPE["rpe"]),
    ("lsin, 12,000 steps", "slice18/sin-12k/lsin", RECIPE["rpe"]),
]


def fit(xs, ys):
    """(slope, its standard error) of least squares y = a + b x."""
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    a = my - b * mx
    s2 = sum((y - a - b * x) ** 2 for x, y in zip(xs, ys)) / (len(xs) - 2)
    return b, math.sqrt(s2 / sxx)


for name, base, crit in RUNS:
    pts = curve(base)
    xs = [math.log2(step * TOKENS_PER_STEP) for step, _ in pts]
    ys = [c for _, c in pts]
    b, se = fit(xs, ys)
    t = C.t_quantile(0.975, len(xs) - 2)
    lo, hi = b - t * se, b + t * se
    target = statistics.fmean(cost(*c) for c in crit) / 2
    last = ys[-1]
    need = (target - last) / hi if hi > 0 else math.inf
    print("%s: %d checkpoints, %.1f M to %.1f M tokens seen (%.1f doublings); cost %+.4f to %+.4f, last %+.4f; "
          "slope %+.6f [%+.6f, %+.6f] nats per doubling; criterion %.3f, %.0f times the upper bound: at that rate "
          "%s more doublings" % (name, len(xs), 2 ** xs[0] / 1e6, 2 ** xs[-1] / 1e6, xs[-1] - xs[0], min(ys),
                                 max(ys), last, b, lo, hi, target, target / hi if hi > 0 else math.inf,
                                 "%.0f" % need if need != math.inf else "no number of"))
