#!/usr/bin/env python3
"""Slice 18's verdicts (../README.md, "Slice 18"), from the read-outs that
slice11/readout.sh writes for each arm into its own folder:

    python3 results/position-learning/slice18/judge.py APE_DIR SIN_DIR RPE_DIR

APE_DIR: `ape` at 24,000 steps over 7.8x the text; SIN_DIR: `sin` and
`lsin` at 12,000 steps; RPE_DIR: `rpe` at 24,000 steps over the same text.
Each holds order.txt (order_ablation.py's line per final model: "as is: A
shuffled: S"; the word-order cost is S - A), PE.order_by_step.jsonl
(`posemb probe order` at every kept checkpoint) and PE.scale_by_step.txt
("STEP SCALE", "final SCALE"). A folder not read out yet ("-") is skipped
and its hypotheses say so. Prints one line per hypothesis and check, with
the learned scales and the largest cost at a kept step that the plan
reports (the held-out losses are in each run's log and lines)."""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from axes import cost  # noqa: E402  (the notebook's readers: order.txt's line, the checkpoints' costs)
from phase import costs as by_step  # noqa: E402

THRESHOLD = 0.05  # nats: H18.1 and H18.3's "unread"
READS = 1.0       # nats: the check that rpe reads word order


def final_cost(folder, pe):
    """The final model's word-order cost on order.txt's order_ablation.py line, or None without one."""
    order, piece = os.path.join(os.path.abspath(folder), "order.txt"), f"/models/{pe}/pretrain "
    return cost(order, piece) if piece in open(order).read() else None


def scales(folder, pe):
    """{step or "final": learned scale} from PE.scale_by_step.txt (missing values skipped)."""
    out = {}
    with open(os.path.join(folder, pe + ".scale_by_step.txt")) as f:
        for line in f:
            step, value = line.split()
            if value != "-":
                out[step if step == "final" else int(step)] = float(value)
    return out


def largest_by_step(folder, pe):
    """(largest order_cost at any kept checkpoint, its step) from PE.order_by_step.jsonl."""
    step, c = max(by_step(os.path.join(os.path.abspath(folder), pe)), key=lambda sc: sc[1])
    return c, step


def unread(name, pe, folder):
    c = final_cost(folder, pe)
    if c is None:
        return f"{name}: {pe} not read out in {folder}"
    verdict = "held" if c < THRESHOLD else "did not hold"
    big = largest_by_step(folder, pe)
    return (f"{name} {verdict}: {pe}'s word-order cost {c:+.4f} nats (unread below {THRESHOLD}); "
            f"largest at a kept step {big[0]:+.4f} (step {big[1]})")


def main(ape, sin, rpe):
    present = lambda d: d != "-" and os.path.exists(os.path.join(d, "order.txt"))
    if present(ape):
        print(unread("H18.1", "ape", ape))
        s = scales(ape, "ape")
        mid, end = s.get(12000), s.get("final")
        if mid is None or end is None:
            print("H18.2: the scale at step 12000 or at the end is missing")
        else:
            print(f"H18.2 {'held' if end > mid else 'did not hold'}: ape's learned scale {end:.6f} at the end "
                  f"against {mid:.6f} at step 12000")
        print("reported: ape's scale by step: " + ", ".join(f"{k} {v:.4f}" for k, v in s.items()))
    else:
        print("H18.1, H18.2: ape not read out yet")
    if present(sin):
        for pe in ("sin", "lsin"):
            print(unread("H18.3", pe, sin))
    else:
        print("H18.3: sin and lsin not read out yet")
    if present(rpe):
        c = final_cost(rpe, "rpe")
        print(f"check: rpe's word-order cost {c:+.4f} nats ({'reads' if c > READS else 'does not read'} word order; "
              f"the criterion, half of it: {c / 2:.4f})")
    else:
        print("check: rpe not read out yet")
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
