#!/usr/bin/env python3
"""Does the change of attention's reach order the rise of perplexity?

For every run of the length study with attention measured at both lengths
(APEs have none past their table), x is the change from SHORT to LONG of the
attention-weighted distance as a share of even attention's, (L - 1) / 4,
averaged over layers; y is perplexity at LONG over perplexity at SHORT.
Prints each run, Spearman's rho (average ranks for ties) and its two-sided
permutation p (shuffles of y against x, fixed seed).

Seed 1 suggested the relation (rho = 0.90 over 13 runs) after the table was
seen; seeds 2 and 3 test it:

    python3 results/length/share_vs_perplexity.py RUN --seeds 2,3

RUN holds the study's results.jsonl and attention.jsonl (results/length/ does).
Standard library only.
"""
import argparse
import json
import os
import random
import sys


def read_jsonl(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except (OSError, ValueError) as e:
        sys.exit("share_vs_perplexity: %s: %s" % (path, e))


def shares(lines, short, long_):
    """(task, pe, seed) -> (share at short, share at long); a later line wins."""
    at = {}
    for d in lines:
        dist = d.get("mean_distance")
        if not dist or d["length"] not in (short, long_):
            continue
        if any(v is None for v in dist):
            continue
        even = (d["length"] - 1) / 4.0
        at[(d["task"], d["pe"], d["seed"], d["length"])] = sum(dist) / len(dist) / even
    out = {}
    for (task, pe, seed, length), s in at.items():
        if length == short and (task, pe, seed, long_) in at:
            out[(task, pe, seed)] = (s, at[(task, pe, seed, long_)])
    return out


def perplexities(lines, short, long_):
    ppl = {}
    for d in lines:
        if d.get("kind") == "lm" and d["eval_len"] in (short, long_):
            ppl[(d["task"], d["pe"], d["seed"], d["eval_len"])] = d["metrics"]["perplexity"]
    return ppl


def ranks(v):
    order = sorted(range(len(v)), key=lambda i: v[i])
    r = [0.0] * len(v)
    i = 0
    while i < len(v):
        j = i
        while j + 1 < len(v) and v[order[j + 1]] == v[order[i]]:
            j += 1
        for k in range(i, j + 1):
            r[order[k]] = (i + j) / 2.0 + 1.0
        i = j + 1
    return r


def pearson(a, b):
    n = len(a)
    ma, mb = sum(a) / n, sum(b) / n
    sab = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    saa = sum((x - ma) ** 2 for x in a)
    sbb = sum((y - mb) ** 2 for y in b)
    return sab / (saa * sbb) ** 0.5


def spearman_permutation(x, y, shuffles, seed):
    rx, ry = ranks(x), ranks(y)
    rho = pearson(rx, ry)
    rng = random.Random(seed)
    perm = list(ry)
    hits = 0
    for _ in range(shuffles):
        rng.shuffle(perm)
        if abs(pearson(rx, perm)) >= abs(rho) - 1e-12:
            hits += 1
    return rho, (hits + 1) / (shuffles + 1)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("run", help="folder with results.jsonl and attention.jsonl")
    ap.add_argument("--seeds", default="", help="comma-separated seeds to keep (default: all)")
    ap.add_argument("--short", type=int, default=128)
    ap.add_argument("--long", type=int, default=2048)
    ap.add_argument("--shuffles", type=int, default=200000)
    args = ap.parse_args()
    keep = {int(s) for s in args.seeds.split(",") if s}
    att = shares(read_jsonl(os.path.join(args.run, "attention.jsonl")), args.short, args.long)
    ppl = perplexities(read_jsonl(os.path.join(args.run, "results.jsonl")), args.short, args.long)
    rows = []
    for (task, pe, seed), (s0, s1) in sorted(att.items()):
        if keep and seed not in keep:
            continue
        p0, p1 = ppl.get((task, pe, seed, args.short)), ppl.get((task, pe, seed, args.long))
        if p0 is None or p1 is None:
            continue
        rows.append((task, pe, seed, s1 - s0, p1 / p0))
    if len(rows) < 3:
        sys.exit("share_vs_perplexity: %d runs with attention and perplexity at %d and %d; 3 needed"
                 % (len(rows), args.short, args.long))
    print("task,pe,seed,share_change,perplexity_ratio")
    for r in rows:
        print("%s,%s,%d,%+.3f,%.3f" % r)
    rho, p = spearman_permutation([r[3] for r in rows], [r[4] for r in rows], args.shuffles, 1)
    print("runs %d  spearman_rho %.3f  permutation_p %.2g  (%d shuffles, two-sided)"
          % (len(rows), rho, p, args.shuffles))


if __name__ == "__main__":
    main()
