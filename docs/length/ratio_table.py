#!/usr/bin/env python3
"""Perplexity at the longest length over perplexity at the training length, per seed.

    python3 docs/length/ratio_table.py docs/length/results.jsonl [--long 2048]

Prints one markdown row per decoder and PE: each seed's ratio ppl(long) / ppl(128),
their mean +- std, the share of seeds whose ratio is below 1, and a one-sample
t-test of log(ratio) against 0 over the seeds (two-sided). The ratio is read
within each seed because both perplexities come from the same model, so the
test is on the per-seed quantity, not a Welch test across two samples. With
n seeds the t statistic has n - 1 degrees of freedom; its p-value is computed
exactly for 1 and 2 degrees of freedom and by the regularized incomplete beta
function otherwise (stdlib only: no scipy on a fresh machine).

RoPE's scalings applied at evaluation (the "scaled" field) are rows of their
own, "rope/yarn" and so on.
"""
import json
import math
import statistics
import sys
from collections import defaultdict


def t_pvalue(t, df):
    """Two-sided p of Student's t with df degrees of freedom."""
    t = abs(t)
    if math.isinf(t):
        return 0.0
    if df == 1:
        return 1.0 - 2.0 * math.atan(t) / math.pi
    if df == 2:
        return 1.0 - t / math.sqrt(2.0 + t * t)
    x = df / (df + t * t)
    return betainc(df / 2.0, 0.5, x)


def betainc(a, b, x):
    """Regularized incomplete beta I_x(a, b) by its continued fraction."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    lbeta = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
    front = math.exp(lbeta + a * math.log(x) + b * math.log(1.0 - x))
    if x > (a + 1.0) / (a + b + 2.0):
        return 1.0 - betainc(b, a, 1.0 - x)
    c, d, f = 1.0, 1.0 - (a + b) * x / (a + 1.0), 0.0
    d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
    f = d
    for m in range(1, 300):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > 1e-300 else 1e-300)
            c = 1.0 + num / c
            c = c if abs(c) > 1e-300 else 1e-300
            f *= c * d
        if abs(c * d - 1.0) < 1e-12:
            break
    return front * f / a


def read_perplexities(path):
    """(decoder, pe) -> seed -> eval_len -> perplexity."""
    ppl = defaultdict(lambda: defaultdict(dict))
    with open(path) as fh:
        for line in fh:
            row = json.loads(line)
            if row.get("kind") != "lm":
                continue
            pe = row["pe"]
            ppl[(row["task"], pe)][row["seed"]][row["eval_len"]] = row["metrics"]["perplexity"]
            for name, value in (row.get("scaled") or {}).items():
                ppl[(row["task"], pe + "/" + name)][row["seed"]][row["eval_len"]] = value
    return ppl


def ratio_row(decoder, pe, by_seed, short, long_):
    seeds = sorted(s for s, v in by_seed.items() if short in v and long_ in v)
    if not seeds:
        return None
    ratios = [by_seed[s][long_] / by_seed[s][short] for s in seeds]
    logs = [math.log(r) for r in ratios]
    mean = statistics.mean(ratios)
    std = statistics.stdev(ratios) if len(ratios) > 1 else float("nan")
    below = sum(r < 1.0 for r in ratios)
    p = float("nan")
    if len(logs) > 1:
        sd = statistics.stdev(logs)
        t = statistics.mean(logs) / (sd / math.sqrt(len(logs))) if sd > 0 else math.inf
        p = t_pvalue(t, len(logs) - 1)
    each = ", ".join("%.2f" % r for r in ratios)
    return "| %s | `%s` | %s | %.2f +- %.2f | %d/%d | %.2g |" % (
        decoder, pe, each, mean, std, below, len(ratios), p)


def main(argv):
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--long"):
        print("usage: ratio_table.py RESULTS.jsonl [--long N]", file=sys.stderr)
        return 2
    try:
        long_ = int(argv[3]) if len(argv) == 4 else 2048
        ppl = read_perplexities(argv[1])
    except KeyError as e:
        print("ratio_table: %s: a line without the field %s" % (argv[1], e), file=sys.stderr)
        return 3
    except (OSError, ValueError, TypeError) as e:
        print("ratio_table: %s: %s" % (argv[1], e), file=sys.stderr)
        return 3
    # Scaled RoPE rows take RoPE's own perplexity at the training length.
    for (decoder, pe), by_seed in list(ppl.items()):
        if "/" in pe:
            for s, v in by_seed.items():
                if 128 in ppl[(decoder, "rope")].get(s, {}):
                    v.setdefault(128, ppl[(decoder, "rope")][s][128])
    print("| decoder | PE | ratio per seed | mean +- std | below 1 | p (log ratio = 0) |")
    print("|---|---|---|---:|---:|---:|")
    for decoder, pe in sorted(ppl):
        row = ratio_row(decoder, pe, ppl[(decoder, pe)], 128, long_)
        if row:
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
