#!/usr/bin/env python3
"""Perplexity at the longest length over perplexity at the training length, per seed.

    python3 results/length/ratio_table.py results/length/results.jsonl [--long 2048]

Prints one markdown row per decoder and PE: each seed's ratio ppl(long) / ppl(128),
their mean +- std, the share of seeds whose ratio is below 1, and a one-sample
t-test of log(ratio) against 0 over the seeds (two-sided). The ratio is read
within each seed because both perplexities come from the same model, so the
test is on the per-seed quantity, not a Welch test across two samples. With
n seeds the t statistic has n - 1 degrees of freedom; its p-value is computed
by the regularized incomplete beta function of scripts/study-claims (stdlib
only: no scipy on a fresh machine).

RoPE's scalings applied at evaluation (the "scaled" field) are rows of their
own, "rope/yarn" and so on.
"""
import importlib.machinery
import importlib.util
import json
import math
import os
import statistics
import sys
from collections import defaultdict

SHORT = 128  # the training length


def load_study_claims():
    """scripts/study-claims as a module, for its incomplete_beta (it has no .py name)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "study-claims")
    loader = importlib.machinery.SourceFileLoader("study_claims", path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("study_claims", loader))
    loader.exec_module(module)
    return module


incomplete_beta = load_study_claims().incomplete_beta


def t_pvalue(t, df):
    """Two-sided p of Student's t with df degrees of freedom (0 for an infinite t)."""
    return incomplete_beta(df / 2.0, 0.5, df / (df + t * t))


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
    # A scaling changes nothing at the training length: there it is its PE's own perplexity.
    for (decoder, pe), by_seed in list(ppl.items()):
        base = ppl.get((decoder, pe.split("/")[0]), {}) if "/" in pe else {}
        for seed, by_len in by_seed.items():
            if SHORT in base.get(seed, {}):
                by_len.setdefault(SHORT, base[seed][SHORT])
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
    print("| decoder | PE | ratio per seed | mean +- std | below 1 | p (log ratio = 0) |")
    print("|---|---|---|---:|---:|---:|")
    for decoder, pe in sorted(ppl):
        row = ratio_row(decoder, pe, ppl[(decoder, pe)], SHORT, long_)
        if row:
            print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
