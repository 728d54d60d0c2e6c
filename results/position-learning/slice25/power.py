#!/usr/bin/env python3
"""Slice 25's power, computed before its runs (../README.md, "Slice 25"), from the spread between
pretrainings that slice 9 measured (three pretrainings each of `sin:scale=0.05` and `rpe` at 6000
steps, 3 fine-tuning seeds each; a pretraining's score the mean of its fine-tunings).

For each score the verdicts read (the GLUE mean at 128, SQuAD-locate F1 at 128, F1 lost from 128 to
512), the sd between pretrainings of one PE, pooled over the two PEs (4 df), and the difference a
two-sided t-test (0.05, 80% power, Student's, 2n - 2 df) detects with n pretrainings per PE: the
floor of Welch's test; then Welch's own, with each PE's spread (the verdicts' test; slice 9's two PEs
spread very differently). Then how many pretrainings per PE would detect the seed paper's GLUE gap
(0.3-0.5 points) at the pooled floor. Run from anywhere:
    python3 results/position-learning/slice25/power.py"""
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))  # results/: lab.py
from lab import C, module  # noqa: E402

S9 = module(os.path.join(HERE, "..", "slice9", "verdicts.py"), "slice9_verdicts")
P9 = module(os.path.join(HERE, "..", "slice9", "power.py"), "slice9_power")  # pooled_sd, detectable (Student)
SCORES = {"GLUE mean, 128": C.glue_mean, "SQuAD-locate F1, 128": C.f1_128, "SQuAD-locate F1 lost, 128 to 512": C.f1_lost}


def welch_detectable(sa, sb, n):
    """(the difference Welch's test detects at 80% power with n pretrainings of each, its df): scripts/claims'
    interval at that standard error and Welch-Satterthwaite df."""
    va, vb = sa * sa / n, sb * sb / n
    df = (va + vb) ** 2 / (va * va / (n - 1) + vb * vb / (n - 1))
    return C.interval(0.0, math.sqrt(va + vb), df)[4], df


def main():
    d = S9.draws()
    print("score | sd between pretrainings (pooled, sin:scale=0.05 and rpe at 6000 steps, 4 df) | "
          "detectable at n = 2, 3, 4, 6 pretrainings per PE")
    sds = {}
    for name, f in SCORES.items():
        sd = sds[name] = P9.pooled_sd([[f(c) for c in by.values()] for by in d.values()])
        print(f"{name} | {sd:.4f} | " + ", ".join(f"{P9.detectable(sd, n):.4f}" for n in (2, 3, 4, 6)))
    # Welch's test with each PE's own spread (the verdicts' test): slice 9's sinusoid spread far more than its rpe
    print("score | sd between pretrainings, sin:scale=0.05 and rpe | Welch detects at n = 2, 3, 4, 6 per PE (df)")
    for name, f in SCORES.items():
        a, b = ([f(c) for c in by.values()] for by in d.values())
        sa, sb = statistics.stdev(a), statistics.stdev(b)
        print(f"{name} | {sa:.4f}, {sb:.4f} | " + ", ".join(
            "%.4f (%.1f)" % welch_detectable(sa, sb, n) for n in (2, 3, 4, 6)))
    for gap in (0.003, 0.005):
        need = next(n for n in range(2, 100000) if P9.detectable(sds["GLUE mean, 128"], n) <= gap)
        print(f"pretrainings per PE for the GLUE mean to detect {gap}: {need}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
