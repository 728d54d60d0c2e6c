#!/usr/bin/env python3
"""Slice 20's verdicts (../README.md, "Slice 20"), from slice11/readout.sh's
read-out of its four runs into one folder, each run a "model" named
ARM-sSEED (frozen-ordered-s1, frozen-shuffled-s1, frozen-ordered-s2,
frozen-shuffled-s2), and slice 19's read-out, which holds the positive
control (sinusoid-s1):

    python3 results/position-learning/slice20/judge.py DIR SLICE19_DIR

DIR holds order.txt (order_ablation.py's line per final model) and
NAME.order_by_step.jsonl (`posemb probe order` at every checkpoint). The
check reads the sinusoid arm's final cost in SLICE19_DIR (slice 19's C19);
H20.1 and H20.2 compare the final models' word-order costs
(order_ablation.py's, as slices 1-19 judge), judged only if the check
held. A run not read out yet is named and its hypothesis not judged."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "slice18"))
from judge import final_cost  # noqa: E402  (slice 18's reader of order.txt)
from phase import costs as by_step  # noqa: E402

SEEDS = (1, 2)
MARGIN = 0.1  # nats: H20.1's "read", H20.2's difference, and the check's bar (slice 19's C19)
ARMS = ("frozen-ordered", "frozen-shuffled")


def read(folder, name):
    """The final cost of run name in folder, or None when it is not read out."""
    order = os.path.join(folder, "order.txt")
    return final_cost(folder, name) if os.path.exists(order) else None


def main(folder, slice19):
    folder, slice19 = os.path.abspath(folder), os.path.abspath(slice19)
    cost = {f"{arm}-s{s}": read(folder, f"{arm}-s{s}") for arm in ARMS for s in SEEDS}
    for s in SEEDS:
        print(f"seed {s}: " + ", ".join(
            f"{arm} {'-' if cost[f'{arm}-s{s}'] is None else format(cost[f'{arm}-s{s}'], '+.4f')}" for arm in ARMS))
    sin = read(slice19, "sinusoid-s1")
    check = None if sin is None else sin > MARGIN
    print("check: slice 19's sinusoid arm not read out" if sin is None else
          f"check {'held' if check else 'did not hold'}: slice 19's sinusoid arm {sin:+.4f} nats (above {MARGIN}?)")
    complete = all(c is not None for c in cost.values())
    if not check:
        print("H20.1, H20.2: not judged (" + ("the check not read" if check is None else "the check did not hold") + ")")
    elif not complete:
        print("H20.1, H20.2: " + ", ".join(n for n, c in cost.items() if c is None) + " not read out, not judged")
    else:
        print(f"H20.1 {'held' if all(c > MARGIN for c in cost.values()) else 'did not hold'}: every frozen run "
              f"above {MARGIN}? " + ", ".join(f"{n} {c:+.4f}" for n, c in cost.items()))
        diffs = [cost[f"frozen-ordered-s{s}"] - cost[f"frozen-shuffled-s{s}"] for s in SEEDS]
        print(f"H20.2 {'held' if all(d > MARGIN for d in diffs) else 'did not hold'}: ordered minus shuffled "
              + ", ".join(f"{d:+.4f}" for d in diffs) + f" nats (above {MARGIN} in both seeds?)")
    for name, c in cost.items():
        if c is None:
            continue
        steps = by_step(os.path.join(folder, name))
        print(f"reported {name}: final cost {c:+.4f}; against the sinusoid arm "
              f"{'-' if sin is None else format(c - sin, '+.4f')}; cost by step "
              + ", ".join(f"{st} {v:+.3f}" for st, v in steps))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1], sys.argv[2]))
