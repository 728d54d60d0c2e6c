#!/usr/bin/env python3
"""Slice 23's verdicts (../README.md, "Slice 23"), from slice11/readout.sh's
read-out of its runs into one folder (each run a "model" named ARM-sSEED:
fixed-factor-8k-s1, -s2, learned-scale-8k-s1, -s2, smooth-a-s1, smooth-b-s2)
with frozen.py's frozen.txt beside it, and the read-outs of slices 19 and 22
(the sinusoid frozen at the same amplitude: slice 19's sinusoid-s1, slice 22's
frozen-sin-s2):

    python3 results/position-learning/slice23/judge.py DIR SLICE19_DIR SLICE22_DIR

Every run read must have its arm's PE (fixed-factor-8k: the factor 0.713, no
learned scale, not frozen; learned-scale-8k: a learned scale, not frozen; the
smooth runs: slice 22's `ape:scale=0.05,frozen=on` and a frozen.txt line
saying the table is its start's), and its last kept checkpoint must be its
arm's last step (8000 for the -8k arms, 4000 for the smooth runs); else the
judge stops. The final models' word-order costs (order_ablation.py's) decide,
against the bar 0.1 nats. H23.1 is judged when fixed-factor-8k's two runs are
in, H23.2 when both 8000-step arms' four are; H23.3 and H23.4 when both smooth
runs are in (and H23.4 only when H23.3 held)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))  # results/: lab.py
from lab import module  # noqa: E402

J22 = module(os.path.join(HERE, "..", "slice22", "judge.py"), "judge22")  # slice 22's, with slice 20's as J22.J
J = J22.J
RUNS = ("fixed-factor-8k-s1", "fixed-factor-8k-s2", "learned-scale-8k-s1", "learned-scale-8k-s2",
        "smooth-a-s1", "smooth-b-s2")
SIN = {"smooth-a-s1": ("slice19", "sinusoid-s1"), "smooth-b-s2": ("slice22", "frozen-sin-s2")}  # same seed, same amplitude


def check_run(folder, name):
    """Stops unless run name's PE is its arm's (and, for a frozen run, frozen.txt says its table held)."""
    if name.startswith("smooth-"):
        return J22.check_run(folder, name)
    pe = J.pe_of(folder, name)
    learned = name.startswith("learned-scale-")
    ok = "frozen=on" not in pe and ("learned_scale=on" in pe) == learned and (learned or "scale=0.713" in pe)
    if not ok:
        sys.exit(f"judge.py: {name}: PE {pe} is not its arm's")


def check_steps(name, steps):
    """Stops unless run name's last kept checkpoint (steps: its [(step, cost)]) is its arm's last step."""
    if steps[-1][0] != (8000 if "-8k-" in name else 4000):
        sys.exit(f"judge.py: {name}: its last checkpoint is step {steps[-1][0]}, not its arm's")


def main(folder, slice19, slice22):
    folder = os.path.abspath(folder)
    cost = {n: J.read(folder, n) for n in RUNS}
    steps = {n: J.by_step(os.path.join(folder, n)) for n, c in cost.items() if c is not None}
    for name in steps:
        check_run(folder, name)
        check_steps(name, steps[name])
    sin = {n: J.read(os.path.abspath({"slice19": slice19, "slice22": slice22}[d]), r) for n, (d, r) in SIN.items()}
    pick = lambda *names: {n: cost[n] for n in names}  # noqa: E731
    used = lambda g: all(c > J.MARGIN for c in g.values())  # noqa: E731
    J.judged("H23.1 (fixed-factor-8k reads order in both seeds)", used, pick("fixed-factor-8k-s1", "fixed-factor-8k-s2"))
    J.judged("H23.2 (learned-scale-8k unread, and below fixed-factor-8k of its seed by more than 0.1, in both seeds)",
            lambda g: all(g[f"learned-scale-8k-s{s}"] < J.MARGIN and
                          g[f"fixed-factor-8k-s{s}"] - g[f"learned-scale-8k-s{s}"] > J.MARGIN for s in J.SEEDS),
            pick("learned-scale-8k-s1", "learned-scale-8k-s2", "fixed-factor-8k-s1", "fixed-factor-8k-s2"))
    if J.judged("H23.3 (the smooth code reads order in both draws)", used, pick(*SIN)):
        print("the sinusoid at the same amplitude, same seeds: " + ", ".join(
            f"{SIN[n][1]} ({SIN[n][0]}) {sin[n]:+.4f}" for n in SIN) + "; smooth minus sinusoid: " + ", ".join(
            f"{n} {cost[n] - sin[n]:+.4f}" for n in SIN))
        J.judged("H23.4 (the smooth code above the sinusoid of its seed by more than 0.1 in both draws)",
                lambda g: all(g[n] - sin[n] > J.MARGIN for n in SIN), pick(*SIN))
    elif None not in pick(*SIN).values():
        print("H23.4: not judged (H23.3 did not hold)")
    for name in steps:
        J22.report(name, cost[name], steps[name])
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
