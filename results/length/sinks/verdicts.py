#!/usr/bin/env python3
"""Slice 1 of the sink notebook (README.md): HS1 and HS2 judged from the
runs' sink curves (each run's line at the training length carries
`sink_curve`: per checkpoint [step, mean over layers and heads of the
first-token mass, the largest head's, the share of heads past 0.3]), in
sinks.results.jsonl beside this script or the file named. Written on
2026-12-04, before any run of the slice. A cell's test is a paired
difference over its seeds (scripts/claims' one_sample_ci), each cell its
own verdict, Gu et al.'s claim under the verdict table's rule beside it (no
paper size in this unit). Until all 24 runs are in, nothing is judged.
Run from anywhere:
    python3 results/length/sinks/verdicts.py [LINES]"""
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # results/: lab.py
from lab import C, lines  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
SOFTMAX = ["rope", "none", "alibi"]
REFERENCE = "stickbreaking"
DECODERS = ["gpt2", "llama"]
SEEDS = [1, 2, 3]
RUNS = (len(SOFTMAX) + 1) * len(DECODERS) * len(SEEDS)
SINK = 0.3  # Gu et al.'s Sink_1^0.3 threshold
FIRST, LAST, HS1_TO = 250, 2000, 1750


def curves(path):
    """{(pe, decoder, seed): {step: (mean, max, share)}} of the runs whose line carries a sink curve."""
    out = {}
    for r in lines(path) if os.path.exists(path) else []:
        if "sink_curve" in r:
            out[(r["pe"], r["task"], r["seed"])] = {int(s): (m, x, sh) for s, m, x, sh in r["sink_curve"]}
    return out


def main(argv):
    got = curves(argv[1] if len(argv) > 1 else os.path.join(HERE, "sinks.results.jsonl"))
    judged = len(got) == RUNS
    print(f"{len(got)} of {RUNS} runs in" + ("" if judged else "; interim, nothing is judged (the plan)"))
    said = (lambda ok: "held" if ok else "did not hold") if judged else (lambda ok: "interim, not judged")

    past = [(k, s, v[1]) for k, c in sorted(got.items()) if k[0] in SOFTMAX
            for s, v in sorted(c.items()) if FIRST <= s <= HS1_TO and v[1] > SINK]
    n1 = sum(1 for k in got if k[0] in SOFTMAX)
    print(f"\nHS1 (no head of {', '.join(SOFTMAX)} past {SINK} at steps {FIRST}-{HS1_TO}, {n1} runs): "
          f"{len(past)} checkpoint(s) past it: {said(not past)}")
    for k, s, x in past:
        print(f"  {k[0]} {k[1]} seed {k[2]}: largest head {x:.3f} at step {s}")

    print(f"\nHS2 (the largest head's first-token mass, step {LAST} minus step {FIRST}, paired over seeds):")
    for pe in SOFTMAX:
        for d in DECODERS:
            runs = [got[(pe, d, s)] for s in SEEDS if (pe, d, s) in got]
            diff = [c[LAST][1] - c[FIRST][1] for c in runs if LAST in c and FIRST in c]
            means = [(c[FIRST][0], c[LAST][0]) for c in runs if LAST in c and FIRST in c]
            if len(diff) < 2:
                print(f"  {pe} {d}: {len(diff)} seed(s), not judged")
                continue
            e, lo, hi, p, mde = C.one_sample_ci(diff)
            print(f"  {pe} {d}: {e:+.4f} [{lo:+.4f}, {hi:+.4f}] p = {p:.3g}, detects {mde:.3g}, n {len(diff)}: "
                  f"{said(lo > 0)}; mean over heads {statistics.mean(m[0] for m in means):.4f} -> "
                  f"{statistics.mean(m[1] for m in means):.4f} (reported, not tested)")
            if judged:
                v, why = C.verdict(e, lo, hi, mde, None, +1)
                print(f"    as Gu et al.'s claim (a sink is learned): {v}" + (f" ({why})" if why else ""))

    print(f"\n{REFERENCE} (a reference, tested for nothing): largest head at step {FIRST} / {LAST}")
    for d in DECODERS:
        for s in SEEDS:
            c = got.get((REFERENCE, d, s))
            if c and FIRST in c and LAST in c:
                print(f"  {d} seed {s}: {c[FIRST][1]:.4f} / {c[LAST][1]:.4f}")


if __name__ == "__main__":
    main(sys.argv)
