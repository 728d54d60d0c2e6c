#!/usr/bin/env python3
"""docs/study.md's "The default now" from a default study's lines: the runs that collapsed, the PEs
that solve each task (their mean over seeds within 0.9 of the way from chance to perfect, at the
training length), and the per-seed table (each line's headline metric, its first: exact match for
spans, accuracy for classification, token accuracy for `reverse`; C: collapsed). Standard library
and results/lab.py only.
    python3 results/study-default/per_seed.py [RESULTS.jsonl]   (default: this folder's)"""
import collections
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # results/: lab.py
from lab import lines  # noqa: E402


def score(r):
    """The task's headline metric: a line's first, as scripts/study-claims reads it."""
    return next(iter(r["metrics"].values()))


def main(path):
    runs = [r for r in lines(path) if r["eval_len"] == r["n_train"]]
    pes, tasks, seeds = (list(dict.fromkeys(r[k] for r in runs)) for k in ("pe", "task", "seed"))
    cell = {(r["pe"], r["task"], r["seed"]): r for r in runs}
    down = [k for k, r in cell.items() if r.get("collapsed")]
    print(f"{len(down)} of {len(cell)} runs collapse: " + ", ".join(
        f"{pe} {n}" for pe, n in collections.Counter(k[0] for k in down).most_common()))
    for pe, task, seed in down:
        print(f"  {pe} {task} seed {seed}")
    for t in tasks:
        solved = []
        for p in pes:
            rs = [cell[(p, t, s)] for s in seeds if (p, t, s) in cell]
            mean, chance = statistics.mean(score(r) for r in rs), statistics.mean(r["chance"] for r in rs)
            if (mean - chance) / (1 - chance) >= 0.9:
                solved.append(f"{p} {mean:.3f}")
        print(f"{t}: solved by {len(solved)}" + (": " + ", ".join(solved) if len(solved) < 8 else ""))
    print("\n| PE | " + " | ".join(tasks) + " |\n| --- |" + " --- |" * len(tasks))
    for p in pes:
        print(f"| {p} | " + " | ".join(" ".join(
            "C" if cell[(p, t, s)].get("collapsed") else f"{score(cell[(p, t, s)]):.2f}" for s in seeds)
            for t in tasks) + " |")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1] if len(sys.argv) == 2 else os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                                      "results.jsonl")))
