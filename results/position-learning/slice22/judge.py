#!/usr/bin/env python3
"""Slice 22's verdicts (../README.md, "Slice 22"), from slice11/readout.sh's
read-out of its runs into one folder (each run a "model" named ARM-sSEED; ARM:
frozen-sin, frozen-sin-shuffled, frozen-sin-rotated, frozen-smooth; SEED: 1, 2)
with frozen.py's frozen.txt beside it, and slice 19's read-out:

    python3 results/position-learning/slice22/judge.py DIR SLICE19_DIR [CHECK]

Every run read must have its arm's PE (frozen=on, the fixed factor 0.05, no
learned scale) and a frozen.txt line saying its table is its start's, bit for
bit; else the judge stops. frozen-sin's seed 1 is slice 19's sinusoid arm
(sinusoid-s1 in SLICE19_DIR) when CHECK (default: check.txt beside this
script, run.sh check's output) says all 200 of 200 losses are equal and DIR
has no frozen-sin-s1 of its own. The final models' word-order costs
(order_ablation.py's) decide, over both seeds. C22 is judged when frozen-sin's
two seeds are in, H22.1 and H22.2 only when C22 held and their arm's two
runs are read out; frozen-smooth is reported, not judged."""
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))  # results/: lab.py
from lab import module  # noqa: E402


J = module(os.path.join(HERE, "..", "slice20", "judge.py"), "judge20")  # judge.py of slice 20, under its own name
ARMS = ("frozen-sin", "frozen-sin-shuffled", "frozen-sin-rotated", "frozen-smooth")
READ = 0.05  # nats: the step at which a run is first read, as the other slices report it


def check_run(folder, name):
    """Stops unless run name's PE (its probe line in order.txt) is slice 22's and frozen.txt says its table held."""
    pe = J.pe_of(folder, name)
    if "frozen=on" not in pe or not re.search(r"scale=0\.05(,|$)", pe) or "learned_scale=on" in pe:
        sys.exit(f"judge.py: {name}: PE {pe} is not slice 22's")
    held = os.path.join(folder, "frozen.txt")
    said = [x for x in (open(held) if os.path.exists(held) else []) if x.startswith(f"{name}: ")]
    if not said or not said[-1].rstrip().endswith(": yes"):
        sys.exit(f"judge.py: {name}: frozen.txt does not say its table is its start's")


def onset(steps):
    """The first kept step whose cost passes READ, or None."""
    return next((st for st, c in steps if c > READ), None)


def report(name, c, steps):
    """A run's line: its final cost, the first kept step past READ and its cost by step."""
    first = onset(steps)
    print(f"reported {name}: final cost {c:+.4f} ({'reads' if c > J.MARGIN else 'does not read'} order by "
          f"{J.MARGIN}); first past {READ} at step {first if first is not None else '- (never)'}; cost by step "
          + ", ".join(f"{st} {v:+.3f}" for st, v in steps))


def main(folder, slice19, check):
    folder, slice19 = os.path.abspath(folder), os.path.abspath(slice19)
    cost = {f"{a}-s{s}": J.read(folder, f"{a}-s{s}") for a in ARMS for s in J.SEEDS}
    where = {n: folder for n in cost}
    for name, c in cost.items():
        if c is not None:
            check_run(folder, name)
    passed = os.path.exists(check) and "200 of 200 steps' losses equal" in open(check).read()
    if cost["frozen-sin-s1"] is None and passed:
        cost["frozen-sin-s1"], where["frozen-sin-s1"] = J.read(slice19, "sinusoid-s1"), slice19
        print("frozen-sin-s1: slice 19's sinusoid arm (its first 200 losses equal, " + os.path.basename(check) + ")")
    reads = lambda got: all(c > J.MARGIN for c in got.values())  # noqa: E731
    if None in (cost["frozen-sin-s1"], cost["frozen-sin-s2"]):
        print("C22: frozen-sin not in for both seeds, not judged; H22.1-H22.2 not judged")
    else:
        J.rule("C22 (frozen-sin reads order in both seeds)", reads, ("frozen-sin",), cost)
        if reads({n: cost[n] for n in ("frozen-sin-s1", "frozen-sin-s2")}):
            J.rule("H22.1 (frozen-sin-shuffled unread in both seeds)", lambda g: all(c < J.MARGIN for c in g.values()),
                   ("frozen-sin-shuffled",), cost)
            J.rule("H22.2 (frozen-sin-rotated reads order in both seeds)", reads, ("frozen-sin-rotated",), cost)
        else:
            print("H22.1-H22.2: not judged (C22 did not hold)")
    for name, c in cost.items():
        if c is None:
            continue
        report(name, c, J.by_step(os.path.join(where[name], "sinusoid-s1" if where[name] == slice19 else name)))
    return 0


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else os.path.join(HERE, "check.txt")))
