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
    python3 results/length/sinks/verdicts.py [LINES]
    python3 results/length/sinks/verdicts.py --slice2 LONG_LINES WIDE_LINES [SLICE1_LINES]

--slice2 judges slice 2's HS3-HS6 (README.md, "Slice 2"; added on
2026-12-05 before any of its runs): LONG_LINES and WIDE_LINES are the
long and wide arms' lines (slice2-long.results.jsonl and
slice2-wide.results.jsonl), SLICE1_LINES slice 1's (HS6's width-128 arm;
sinks.results.jsonl beside this script by default). Nothing is judged
until each arm's 6 runs are in.

    python3 results/length/sinks/verdicts.py --slice3 LONGER_LINES [LONG_LINES]

--slice3 judges slice 3's HS7 and HS8 (README.md, "Slice 3"; added on
2026-12-06 before any of its runs): LONGER_LINES the 32,000-step runs'
lines (slice3-longer.results.jsonl), LONG_LINES slice 2's long arm
(slice2-long.results.jsonl beside this script by default). Nothing is
judged until its 3 runs are in."""
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


LONG_LAST, WIDE_LAST = 8000, 2000


REPORTED = "Reported, not tested: the largest head / the mean over heads / the share past 0.3, seed means by step"


def paired(name, what, diff, said):
    """One hypothesis's line: the paired difference's 95% interval over the seeds, or why it is not judged."""
    if len(diff) < 2:
        return f"{name}: {len(diff)} seed(s), not judged"
    e, lo, hi, p, mde = C.one_sample_ci(diff)
    return (f"{name} ({what}): {e:+.4f} [{lo:+.4f}, {hi:+.4f}] p = {p:.3g}, detects {mde:.3g}, n {len(diff)}: "
            f"{said(lo > 0)}")


def by_step(label, cs):
    """The curves CS's seed means at every step they share: largest head / mean over heads / share past 0.3."""
    steps = sorted(set.intersection(*(set(c) for c in cs)))
    return f"  {label} ({len(cs)} seeds): " + "; ".join(
        f"{st} {statistics.mean(c[st][1] for c in cs):.3f} / {statistics.mean(c[st][0] for c in cs):.3f} / "
        f"{statistics.mean(c[st][2] for c in cs):.3f}" for st in steps)


def slice2(long_path, wide_path, slice1_path):
    """HS3-HS6 (README.md, "Slice 2") from the two arms' lines and slice 1's."""
    long_, wide, one = curves(long_path), curves(wide_path), curves(slice1_path)
    arm = {"long": long_, "wide": wide}
    for name, got in arm.items():
        print(f"{name}: {len(got)} of 6 runs in" + ("" if len(got) == 6 else "; interim, nothing is judged"))
    said_long = (lambda ok: "held" if ok else "did not hold") if len(long_) == 6 else (lambda ok: "interim")
    said_wide = (lambda ok: "held" if ok else "did not hold") if len(wide) == 6 else (lambda ok: "interim")
    runs = {pe: [long_[(pe, "llama", s)] for s in SEEDS if (pe, "llama", s) in long_] for pe in ("none", "rope")}

    diff = [c[LONG_LAST][1] - c[LAST][1] for c in runs["none"] if LONG_LAST in c and LAST in c]
    print("\n" + paired("HS3", f"Llama none, largest head at step {LONG_LAST} minus {LAST}, paired", diff, said_long))

    past = [(s, x[1]) for c in runs["rope"] for s, x in sorted(c.items()) if x[1] > SINK]
    print(f"HS4 (Llama rope, no head past {SINK} at any checkpoint, {len(runs['rope'])} runs): "
          f"{len(past)} checkpoint(s) past it: {said_long(not past)}")

    sinks = [max(x[1] for x in c.values()) for c in runs["none"]]
    print(f"HS5 (Llama none, a head past {SINK} by step {LONG_LAST} in at least 2 of 3 seeds): "
          f"largest per seed {', '.join(f'{x:.3f}' for x in sinks)}: {said_long(sum(x > SINK for x in sinks) >= 2)}")

    w = [c[WIDE_LAST][1] for (pe, d, s), c in sorted(wide.items()) if pe == "none" and WIDE_LAST in c]
    n = [c[LAST][1] for (pe, d, s), c in sorted(one.items()) if pe == "none" and d == "llama" and LAST in c]
    if len(w) >= 2 and len(n) >= 2:
        e, lo, hi, p, mde = C.welch_ci(w, n)
        print(f"HS6 (Llama none, largest head at step {WIDE_LAST}, width 256 minus 128, Welch): "
              f"{e:+.4f} [{lo:+.4f}, {hi:+.4f}] p = {p:.3g}, detects {mde:.3g}, n {len(w)} and {len(n)}: "
              f"{said_wide(lo > 0 or hi < 0)}")
    else:
        print(f"HS6: {len(w)} and {len(n)} run(s), not judged")

    print(f"\n{REPORTED}")
    for name, got in arm.items():
        for pe in ("none", "rope"):
            cs = [got[(pe, "llama", s)] for s in SEEDS if (pe, "llama", s) in got]
            if cs:
                print(by_step(f"{name} {pe}", cs))


LONGER_LAST = 32000


def slice3(longer_path, long_path):
    """HS7 and HS8 (README.md, "Slice 3") from the 32,000-step runs and slice 2's long arm."""
    longer, long_ = curves(longer_path), curves(long_path)
    runs = {s: longer[("none", "llama", s)] for s in SEEDS if ("none", "llama", s) in longer}
    print(f"longer: {len(runs)} of 3 runs in" + ("" if len(runs) == 3 else "; interim, nothing is judged"))
    said = (lambda ok: "held" if ok else "did not hold") if len(runs) == 3 else (lambda ok: "interim")
    sinks = [max(x[1] for x in c.values()) for c in runs.values()]
    print(f"\nHS7 (Llama none, a head past {SINK} by step {LONGER_LAST} in at least 2 of 3 seeds): largest per seed "
          f"{', '.join(f'{x:.3f}' for x in sinks)}: {said(sum(x > SINK for x in sinks) >= 2)}")
    diff = [c[LONGER_LAST][1] - long_[("none", "llama", s)][LONG_LAST][1] for s, c in runs.items()
            if LONGER_LAST in c and ("none", "llama", s) in long_]
    print(paired("HS8", f"Llama none, largest head at step {LONGER_LAST} minus slice 2's at {LONG_LAST}, paired by seed",
                 diff, said))
    print(f"\n{REPORTED}")
    if runs:
        print(by_step("longer none", list(runs.values())))


if __name__ == "__main__":
    if sys.argv[1:2] == ["--slice2"]:
        if len(sys.argv) not in (4, 5):
            sys.exit(__doc__)
        slice2(sys.argv[2], sys.argv[3], sys.argv[4] if len(sys.argv) == 5 else os.path.join(HERE, "sinks.results.jsonl"))
    elif sys.argv[1:2] == ["--slice3"]:
        if len(sys.argv) not in (3, 4):
            sys.exit(__doc__)
        slice3(sys.argv[2], sys.argv[3] if len(sys.argv) == 4 else os.path.join(HERE, "slice2-long.results.jsonl"))
    else:
        main(sys.argv)
