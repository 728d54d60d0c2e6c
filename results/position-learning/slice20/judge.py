#!/usr/bin/env python3
"""Slice 20's verdicts (../README.md, "Slice 20"), from slice11/readout.sh's
read-out of its eight runs into one folder, each run a "model" named
ARM-sSEED (ARM: frozen-ordered, frozen-shuffled, frozen-fresh, fixed-factor;
SEED: 1, 2), and slice 19's read-out, which holds the positive control
(sinusoid-s1):

    python3 results/position-learning/slice20/judge.py DIR SLICE19_DIR

DIR holds order.txt (per final model, order_ablation.py's line and `posemb
probe order`'s JSON line with the model's PE) and NAME.order_by_step.jsonl
(`posemb probe order` at every checkpoint). Every run's PE is checked
against its arm's (frozen=on for the frozen arms, the fixed factor 0.713,
no learned scale); a run whose PE differs stops the judge. The check reads
the sinusoid arm's final cost in SLICE19_DIR (slice 19's C19); H20.1-H20.4
compare the final models' word-order costs (order_ablation.py's, as slices
1-19 judge), judged only if the check held and both seeds of the arms a
hypothesis reads are read out."""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "slice18"))
from judge import final_cost  # noqa: E402  (slice 18's reader of order.txt)
from phase import costs as by_step  # noqa: E402

SEEDS = (1, 2)
MARGIN = 0.1  # nats: "reads word order", H20.3's difference, and the check's bar (slice 19's C19)
ARMS = ("frozen-ordered", "frozen-shuffled", "frozen-fresh", "fixed-factor")


def read(folder, name):
    """The final cost of run name in folder, or None when it is not read out."""
    return final_cost(folder, name) if os.path.exists(os.path.join(folder, "order.txt")) else None


def pe_of(folder, name):
    """Run name's PE, from its `posemb probe order` line in order.txt; stops when it has none."""
    for line in open(os.path.join(folder, "order.txt")):
        if line.startswith("{") and f"/{name}/" in json.loads(line)["model"]:
            return json.loads(line)["pe"]
    sys.exit(f"judge.py: {name}: no probe line in order.txt")


def check_pe(folder, name):
    """Stops unless run name's PE is its arm's."""
    pe = pe_of(folder, name)
    frozen = name.startswith("frozen-")
    if ("frozen=on" in pe) != frozen or "scale=0.713" not in pe or "learned_scale=on" in pe:
        sys.exit(f"judge.py: {name}: PE {pe} is not its arm's")


def rule(name, holds, what, cost):
    """Prints a hypothesis read over both seeds of the arms it names; what: its arms."""
    judged(name, holds, {f"{a}-s{s}": cost[f"{a}-s{s}"] for a in what for s in SEEDS})


def judged(name, holds, got):
    """Prints a hypothesis over the runs of got ({run: cost or None}); returns whether it held (None: not judged)."""
    if None in got.values():
        print(f"{name}: " + ", ".join(n for n, c in got.items() if c is None) + " not read out, not judged")
        return None
    print(f"{name} {'held' if holds(got) else 'did not hold'}: " + ", ".join(f"{n} {c:+.4f}" for n, c in got.items()))
    return holds(got)


def main(folder, slice19):
    folder, slice19 = os.path.abspath(folder), os.path.abspath(slice19)
    cost = {f"{a}-s{s}": read(folder, f"{a}-s{s}") for a in ARMS for s in SEEDS}
    for name, c in cost.items():
        if c is not None:
            check_pe(folder, name)
    sin = read(slice19, "sinusoid-s1")
    check = None if sin is None else sin > MARGIN
    print("check: slice 19's sinusoid arm not read out" if sin is None else
          f"check {'held' if check else 'did not hold'}: slice 19's sinusoid arm {sin:+.4f} nats (above {MARGIN}?)")
    if not check:
        print("H20.1-H20.4: not judged (" + ("the check not read" if check is None else "the check did not hold") + ")")
    else:
        reads = lambda got: all(c > MARGIN for c in got.values())  # noqa: E731
        rule("H20.1 (frozen-fresh reads order in both seeds)", reads, ("frozen-fresh",), cost)
        rule("H20.2 (frozen-shuffled reads order in both seeds)", reads, ("frozen-shuffled",), cost)
        rule("H20.3 (frozen-ordered above frozen-shuffled by 0.1 in both seeds)",
             lambda g: all(g[f"frozen-ordered-s{s}"] - g[f"frozen-shuffled-s{s}"] > MARGIN for s in SEEDS),
             ("frozen-ordered", "frozen-shuffled"), cost)
        rule("H20.4 (fixed-factor unread in both seeds)", lambda g: all(c < MARGIN for c in g.values()),
             ("fixed-factor",), cost)
    for name, c in cost.items():
        if c is None:
            continue
        steps = by_step(os.path.join(folder, name))
        print(f"reported {name}: final cost {c:+.4f} ({'reads' if c > MARGIN else 'does not read'} order by {MARGIN}); "
              f"minus the sinusoid arm {'-' if sin is None else format(c - sin, '+.4f')}; cost by step "
              + ", ".join(f"{st} {v:+.3f}" for st, v in steps))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
