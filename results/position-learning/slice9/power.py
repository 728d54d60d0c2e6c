#!/usr/bin/env python3
"""Slice 9's power, computed before its runs from the committed real-data study
(results/study-data/results.jsonl: one pretraining per PE, 3 fine-tuning seeds).

What a design of n pretrainings per PE, 3 fine-tuning seeds each, can detect
between two PEs (two-sided t-test, 0.05, 80% power, Student's, 2n - 2 df).
A pretraining's score is the mean of its 3 fine-tunings, so its spread is
sqrt(sd_draw^2 + sd_ft^2 / 3). sd_ft (between fine-tuning seeds of one
pretraining) is measured here, pooled over the 12 PEs; sd_draw (between
pretrainings) is not measured at this budget yet, so the sizes are given for
sd_draw = 0 (a floor: no design does better) and sd_draw = sd_ft / sqrt(3)
(draws as noisy as the seeds' mean). Run from the repository's root."""
import json
import math
import os
import statistics

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
GLUE = ["CoLA", "SST-2", "MRPC", "STS-B", "RTE"]


def t_quantile(q, df):
    """Quantile of Student's t by bisection on its CDF (regularised incomplete beta by continued fraction)."""
    def cdf(t):
        x = df / (df + t * t)
        return 1 - 0.5 * ibeta(df / 2, 0.5, x)
    lo, hi = 0.0, 100.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if cdf(mid) < q else (lo, mid)
    return (lo + hi) / 2


def ibeta(a, b, x):
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log(1 - x)
    if x > (a + 1) / (a + b + 2):
        return 1 - ibeta(b, a, 1 - x)
    f, c, d = 1.0, 1.0, 0.0
    for i in range(400):
        m = i // 2
        if i == 0:
            num = 1.0
        elif i % 2 == 0:
            num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        else:
            num = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
        d = 1 + num * d
        d = 1 / (d if abs(d) > 1e-30 else 1e-30)
        c = 1 + num / (c if abs(c) > 1e-30 else 1e-30)
        f *= c * d
        if abs(1 - c * d) < 1e-12:
            break
    return math.exp(lbeta) * (f - 1) / a


def lines():
    with open(os.path.join(ROOT, "results", "study-data", "results.jsonl")) as f:
        return [json.loads(x) for x in f]


def main_metric(r):
    return list(r["metrics"].values())[0]


def seed_scores(rows):
    """{pe: {score name: {seed: value}}}: the GLUE mean at 128 and SQuAD-locate F1 at 128 and 512."""
    raw = {}
    for r in rows:
        raw.setdefault(r["pe"], {}).setdefault((r["task"], r["eval_len"]), {})[r["seed"]] = main_metric(r)
    out = {}
    for pe, by in raw.items():
        seeds = sorted(by[("RTE", 128)])
        out[pe] = {"GLUE mean, 128": {s: statistics.mean(by[(t, 128)][s] for t in GLUE) for s in seeds}}
        for n in (128, 512):
            out[pe][f"SQuAD-locate F1, {n}"] = dict(by[("SQuAD-locate", n)])
    return out


def pooled_sd(groups):
    num = sum((len(g) - 1) * statistics.variance(g) for g in groups)
    return math.sqrt(num / sum(len(g) - 1 for g in groups))


def detectable(sd_unit, n):
    df = 2 * n - 2
    return (t_quantile(0.975, df) + t_quantile(0.8, df)) * sd_unit * math.sqrt(2 / n)


def main():
    sc = seed_scores(lines())
    print("score | sd_ft (pooled, 12 PEs) | detectable at n = 2, 3, 5 draws (sd_draw = 0) | the same, sd_draw = sd_ft/sqrt(3)")
    for name in ("GLUE mean, 128", "SQuAD-locate F1, 128", "SQuAD-locate F1, 512"):
        sd_ft = pooled_sd([list(v[name].values()) for v in sc.values()])
        floor = sd_ft / math.sqrt(3)
        noisy = math.sqrt(2) * floor
        a = ", ".join(f"{detectable(floor, n):.4f}" for n in (2, 3, 5))
        b = ", ".join(f"{detectable(noisy, n):.4f}" for n in (2, 3, 5))
        print(f"{name} | {sd_ft:.4f} | {a} | {b}")
    # The paper's GLUE gap (0.3-0.5 points) against the floor: no pretraining spread at all.
    floor = pooled_sd([list(v["GLUE mean, 128"].values()) for v in sc.values()]) / math.sqrt(3)
    for gap in (0.003, 0.005):
        need = next(n for n in range(2, 100000) if detectable(floor, n) <= gap)
        print(f"pretrainings per PE for the GLUE mean to detect {gap} (sd_draw = 0): {need}")
    for pe in ("sin", "rpe"):
        print(pe, {k: round(statistics.mean(v.values()), 4) for k, v in sc[pe].items()})


if __name__ == "__main__":
    main()
