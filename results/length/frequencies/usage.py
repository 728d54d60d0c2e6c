#!/usr/bin/env python3
"""HF2's read-out: where each rotary model puts its frequencies.

Reads rotary_q.csv and rotary_k.csv of `posemb analyze MODEL --text TEXT
--len 128 --out DIR` (rows: layer x head; columns: the mean norm of each
rotation pair, fastest frequency first) for each DIR given, and prints per
model, for q and for k:
  slow  the share of the summed pair norms on the slowest quarter of the
        pairs, averaged over the heads (HF2a: > 0.25);
  pos   the heads whose largest quarter-share is the fastest quarter
        (positional heads); HF2b counts a head when its q and its k both do;
  sem   the heads whose largest quarter-share is the slowest quarter
        (Barbero et al.'s semantic heads), in q, in k and in both.
Usage: usage.py DIR [DIR ...]"""
import csv
import os
import sys


def rows(path):
    with open(path) as f:
        return [[float(x) for x in r] for r in csv.reader(f) if r]


def quarter_shares(row):
    n = len(row)
    total = sum(row)
    return [sum(row[q * n // 4:(q + 1) * n // 4]) / total for q in range(4)]


def heads_peaking(shares, quarter):
    """Per head: is its largest quarter-share the given quarter (0 fastest, 3 slowest)?"""
    return [s.index(max(s)) == quarter for s in shares]


def counts(in_q, in_k):
    """How many heads in q, in k, and in both."""
    return sum(in_q), sum(in_k), sum(a and b for a, b in zip(in_q, in_k))


def main(dirs):
    print("model | q slow share | k slow share | heads positional in q | in k | in both | "
          "semantic in q | in k | in both | heads | q quarter-shares, fast to slow | k's")
    for d in dirs:
        q = [quarter_shares(r) for r in rows(os.path.join(d, "rotary_q.csv"))]
        k = [quarter_shares(r) for r in rows(os.path.join(d, "rotary_k.csv"))]
        slow_q = sum(s[3] for s in q) / len(q)
        slow_k = sum(s[3] for s in k) / len(k)
        pos = " | ".join(str(n) for n in counts(heads_peaking(q, 0), heads_peaking(k, 0)))
        sem = " | ".join(str(n) for n in counts(heads_peaking(q, 3), heads_peaking(k, 3)))
        mean_q = " ".join(f"{sum(s[i] for s in q) / len(q):.3f}" for i in range(4))
        mean_k = " ".join(f"{sum(s[i] for s in k) / len(k):.3f}" for i in range(4))
        print(f"{os.path.basename(d.rstrip('/'))} | {slow_q:.3f} | {slow_k:.3f} | {pos} | {sem} | {len(q)} | "
              f"{mean_q} | {mean_k}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
