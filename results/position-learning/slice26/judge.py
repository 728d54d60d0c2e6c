#!/usr/bin/env python3
"""Slice 26's verdicts (../README.md, "Slice 26"), from the read-outs run.sh writes per seed:

    python3 results/position-learning/slice26/judge.py

slice26/s1 and s2 (order.txt, lsin_scale_0_05.order_by_step.jsonl, its train log); the criterion is
half of `rpe`'s two-draw mean at 6000 steps (slices 7 and 8: order_ablation.py's costs on their
order.txt). A seed not read out yet is skipped and the hypotheses say so. Prints H26.1 and H26.2, then
per seed the final cost, the first kept step past 0.1 and past the criterion, the held-out loss at
the end and the reversal cost."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))  # phase.py, axes.py
sys.path.insert(0, os.path.join(HERE, "..", ".."))  # results/: lab.py
from lab import module  # noqa: E402
from phase import costs as by_step  # noqa: E402
from axes import cost, held_out as log_end, LINE  # noqa: E402

final_cost = module(os.path.join(HERE, "..", "slice18", "judge.py"), "slice18_judge").final_cost  # order.txt's line

PE = "lsin_scale_0_05"
USED = 0.1
RPE = [("slice7/order.txt", "pl8-rpe-6000/"), ("slice8/order.txt", "pl8-rpe-6000-seed2/")]


def reversal(d):
    """reversed - as is on order.txt's order_ablation.py line."""
    line = next(x for x in open(os.path.join(d, "order.txt")) if f"/models/{PE}/pretrain " in x and LINE.search(x))
    as_is = float(line.split("as is: ")[1].split()[0])
    return float(line.split("reversed: ")[1].split()[0]) - as_is


def main():
    half = sum(cost(*r) for r in RPE) / len(RPE) / 2
    seeds = [(n, os.path.join(HERE, n)) for n in ("s1", "s2")]
    got = [(n, d) for n, d in seeds if os.path.exists(os.path.join(d, "order.txt"))]
    if len(got) < 2:
        print("H26.1, H26.2: " + ", ".join(n for n, d in seeds if (n, d) not in got) + " not read out, not judged")
    else:
        c = [final_cost(d, PE) for _, d in got]
        print(f"H26.1 (lsin:scale=0.05 used, above {USED}, in both draws) "
              f"{'held' if all(x > USED for x in c) else 'did not hold'}: " + ", ".join(f"{x:+.4f}" for x in c))
        print(f"H26.2 (reads word order, at least {half:.4f}, half of rpe's two-draw mean at 6000 steps, in both) "
              f"{'held' if all(x >= half for x in c) else 'did not hold'}: "
              + ", ".join(f"{x / half:.2f} of it" for x in c))
    for n, d in got:
        steps = by_step(os.path.join(d, PE))
        first = next((s for s, x in steps if x > USED), None)
        crit = next((s for s, x in steps if x >= half), None)
        end = log_end(os.path.join(d, PE + ".train_log.jsonl"))[0]
        print(f"reported {n}: final cost {final_cost(d, PE):+.4f}; first kept step past {USED}: {first}, past "
              f"{half:.3f}: {crit}; held-out loss at the end {end:.4f}; reversal {reversal(d):+.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
