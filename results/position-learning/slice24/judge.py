#!/usr/bin/env python3
"""Slice 24's verdicts (../README.md, "Slice 24"), from the read-outs run.sh writes per seed:

    python3 results/position-learning/slice24/judge.py S1_DIR S2_DIR RPE_DIR

S1_DIR, S2_DIR: HF's APE (ape:scale=1, model folder ape_scale_1) at 24,000 steps over 7.8 times
the text, pretrain_seed 1 and 2 (order.txt, ape_scale_1.order_by_step.jsonl, rms_by_step.txt);
RPE_DIR: slice 18's `rpe` at the same budget (slice18/rpe-24k). "-" or a folder not read out yet
is skipped and the hypotheses it decides say so. Prints one line per hypothesis (H24.2 only when
H24.1 held, as the plan reads it), then per seed the costs and table RMS the plan reports (the
held-out losses and RTE are in each run's log and lines)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "slice18"))
from judge import final_cost  # noqa: E402  (slice 18's readers: order.txt's line, the checkpoints' costs)
from phase import costs as by_step  # noqa: E402  (slice 18's judge put results/position-learning on the path)

PE = "ape_scale_1"
USED = 0.1  # nats: H24.1's bar


def present(d):
    return d != "-" and os.path.exists(os.path.join(d, "order.txt"))


def report(name, d):
    steps = by_step(os.path.join(os.path.abspath(d), PE))
    past = next((s for s, c in steps if c > USED), None)
    big = max(steps, key=lambda sc: sc[1])
    path = os.path.join(d, "rms_by_step.txt")
    rms = open(path).read().split() if os.path.exists(path) else []
    print(f"reported {name}: final cost {final_cost(d, PE):+.4f}; first kept step past {USED}: {past or '- (never)'}; "
          f"largest at a kept step {big[1]:+.4f} (step {big[0]}); cost by step "
          + ", ".join(f"{s} {c:+.3f}" for s, c in steps)
          + ("; table RMS by step " + ", ".join(f"{a} {b}" for a, b in zip(rms[::2], rms[1::2])) if rms else ""))


def main(s1, s2, rpe):
    seeds = [("s1", s1), ("s2", s2)]
    if all(present(d) for _, d in seeds):
        c = [final_cost(d, PE) for _, d in seeds]
        used = sum(x > USED for x in c)
        verdict = {2: "held", 1: "not shown (one seed only)", 0: "did not hold"}[used]
        print(f"H24.1 (HF's APE used, above {USED}, in both seeds) {verdict}: "
              + ", ".join(f"{n} {x:+.4f}" for (n, _), x in zip(seeds, c)))
        if used < 2:
            print("H24.2: not judged (H24.1 did not hold)")
        elif present(rpe):
            half = final_cost(rpe, "rpe") / 2
            ok2 = all(x >= half for x in c)
            print(f"H24.2 (reads word order, at least half of rpe's {2 * half:.4f}, in both seeds) "
                  f"{'held' if ok2 else 'did not hold'}: " + ", ".join(
                      f"{n} {x / half:.2f} of the criterion {half:.4f}" for (n, _), x in zip(seeds, c)))
        else:
            print("H24.2: rpe at 24,000 steps not read out yet, not judged")
    else:
        print("H24.1, H24.2: " + ", ".join(n for n, d in seeds if not present(d)) + " not read out, not judged")
    for n, d in seeds:
        if present(d):
            report(n, d)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    sys.exit(main(*sys.argv[1:]))
