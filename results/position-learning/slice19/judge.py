#!/usr/bin/env python3
"""Slice 19's verdicts (../README.md, "Slice 19"), from slice11/readout.sh's
read-out of the five runs into one folder, each run a "model" named
ARM-sSEED (ordered-s1, shuffled-s1, ordered-s2, shuffled-s2, sinusoid-s1):

    python3 results/position-learning/slice19/judge.py DIR

DIR holds order.txt (order_ablation.py's line per final model), NAME.order_by_step.jsonl
(`posemb probe order` at every checkpoint) and NAME.scale_by_step.txt. C19 reads the
sinusoid arm's final cost; H19.1 compares the final models' word-order costs
(order_ablation.py's, as slices 1-18 judge), judged only if C19 held; H19.2 reads the
shuffled arm's final scale. A run not read out yet is named and its hypothesis not
judged. Also prints each arm's cost against slice 18's unread bar and the cost and
the scale by step (reported)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "slice18"))
from judge import final_cost, scales  # noqa: E402  (slice 18's readers of order.txt and the scales)
from phase import costs as by_step  # noqa: E402

SEEDS = (1, 2)
MARGIN = 0.1  # nats: H19.1, and C19's bar for the sinusoid arm
PUSHED_OUT = 0.713 / 2  # H19.2: the shuffled arm's scale below half its start at the end
UNREAD = 0.05  # nats: slice 18's "unread"


def main(folder):
    folder = os.path.abspath(folder)
    cost = {}
    for name in [f"{arm}-s{s}" for arm in ("ordered", "shuffled") for s in SEEDS] + ["sinusoid-s1"]:
        ok = os.path.exists(os.path.join(folder, "order.txt")) and os.path.exists(
            os.path.join(folder, name + ".scale_by_step.txt"))
        cost[name] = final_cost(folder, name) if ok else None
    diffs = [cost[f"ordered-s{s}"] - cost[f"shuffled-s{s}"] for s in SEEDS
             if cost[f"ordered-s{s}"] is not None and cost[f"shuffled-s{s}"] is not None]
    for s in SEEDS:
        o, h = cost[f"ordered-s{s}"], cost[f"shuffled-s{s}"]
        print(f"seed {s}: ordered {'-' if o is None else f'{o:+.4f}'}, shuffled {'-' if h is None else f'{h:+.4f}'}")
    sin = cost["sinusoid-s1"]
    check = None if sin is None else sin > MARGIN
    print("C19: the sinusoid arm not read out yet" if sin is None else
          f"C19 {'held' if check else 'did not hold'}: the sinusoid arm's cost {sin:+.4f} nats (above {MARGIN}?)")
    if check is None:
        print("H19.1: not judged until the sinusoid arm (C19) is read out")
    elif check is False:
        print("H19.1: not judged (C19 did not hold: the recipe did not teach the sinusoid's order in this budget)")
    elif len(diffs) == len(SEEDS):
        print(f"H19.1 {'held' if all(d > MARGIN for d in diffs) else 'did not hold'}: ordered minus shuffled "
              + ", ".join(f"{d:+.4f}" for d in diffs) + f" nats (above {MARGIN} in both seeds?)")
    else:
        print(f"H19.1: {len(diffs)} of {len(SEEDS)} seeds read out, not judged")
    ends = {s: scales(folder, f"shuffled-s{s}").get("final") for s in SEEDS if cost[f"shuffled-s{s}"] is not None}
    if len(ends) == len(SEEDS) and None not in ends.values():
        print(f"H19.2 {'held' if all(v < PUSHED_OUT for v in ends.values()) else 'did not hold'}: the shuffled arm's "
              f"final scale " + ", ".join(f"seed {s} {v:.4f}" for s, v in ends.items()) + f" (below {PUSHED_OUT:.4f}?)")
    else:
        print("H19.2: the shuffled arm not read out in both seeds, not judged")
    for name, c in cost.items():
        if c is None:
            continue
        print(f"reported {name}: final cost {c:+.4f} nats, {'read' if c >= UNREAD else 'unread'} by slice 18's bar "
              f"({UNREAD})")
        steps = by_step(os.path.join(folder, name))
        sc = scales(folder, name)
        print(f"reported {name}: cost by step " + ", ".join(f"{st} {v:+.3f}" for st, v in steps)
              + "; scale by step " + ", ".join(f"{k} {v:.4f}" for k, v in sc.items()))
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
