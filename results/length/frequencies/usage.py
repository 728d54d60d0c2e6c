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


def main(dirs):
    print("model | q slow share | k slow share | heads positional in q | in k | in both | "
          "semantic in q | in k | in both | heads | q quarter-shares, fast to slow | k's")
    for d in dirs:
        q = [quarter_shares(r) for r in rows(os.path.join(d, "rotary_q.csv"))]
        k = [quarter_shares(r) for r in rows(os.path.join(d, "rotary_k.csv"))]
        slow_q = sum(s[3] for s in q) / len(q)
        slow_k = sum(s[3] for s in k) / len(k)
        pos_q = [s.index(max(s)) == 0 for s in q]
        pos_k = [s.index(max(s)) == 0 for s in k]
        both = sum(a and b for a, b in zip(pos_q, pos_k))
        sem_q = [s.index(max(s)) == 3 for s in q]
        sem_k = [s.index(max(s)) == 3 for s in k]
        sem = f"{sum(sem_q)} | {sum(sem_k)} | {sum(a and b for a, b in zip(sem_q, sem_k))}"
        mean_q = " ".join(f"{sum(s[i] for s in q) / len(q):.3f}" for i in range(4))
        mean_k = " ".join(f"{sum(s[i] for s in k) / len(k):.3f}" for i in range(4))
        print(f"{os.path.basename(d.rstrip('/'))} | {slow_q:.3f} | {slow_k:.3f} | {sum(pos_q)} | {sum(pos_k)} | "
              f"{both} | {sem} | {len(q)} | {mean_q} | {mean_k}")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
