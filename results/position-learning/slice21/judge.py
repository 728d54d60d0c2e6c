#!/usr/bin/env python3
"""Slice 21's verdicts (../README.md, "Slice 21"), from the read-outs that
slice11/readout.sh writes for each setting into slice21/SETTING:

    python3 results/position-learning/slice21/judge.py [SLICE21_DIR]

Each SETTING folder (text-0.25x, text-7.8x, lr1e-4, lr3e-4, warmup-1500)
holds order.txt (order_ablation.py's line per final model), PE.order_by_step.jsonl,
PE.scale_by_step.txt and PE.train_log.jsonl. The references at the same
setting, `ape` and `rpe`, are the earlier slices' committed read-outs
(REFS). A setting or PE not read out yet is reported as pending and its
hypotheses are not judged. Prints one line per run and one per hypothesis."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
from axes import cost, held_out  # noqa: E402  (order.txt's line: shuffled - as is; a train log's last eval loss)
from phase import costs as by_step  # noqa: E402  (PE.order_by_step.jsonl: [(step, cost)])

NOTEBOOK = os.path.dirname(HERE)  # results/position-learning: the references' folders

UNREAD = 0.05   # nats: H21.1's "unread", as slices 2-20
SAME = 0.02     # nats: H21.2's margin: none - ape at most this (one-sided: an unread APE is no better than no PE)
EXACT = 0.001   # nats: the check that none's cost is 0 (no position: shuffling permutes its outputs)
NONE_BEFORE = {"lr3e-4": ("slice 4, program f34296e", "slice4/none-lr3e-4.train_log.jsonl")}  # reported beside
SETTINGS = {  # setting: (PEs of this slice, {reference PE: (order.txt, piece, train_log)})
    "lr3e-4": (("sin", "lsin", "none"), {
        "ape": ("slice1/order.txt", "pl1-ape/", "slice1/ape-lr3e-4.train_log.jsonl"),
        "rpe": ("slice1/order.txt", "pl1-rpe/", "slice1/rpe-lr3e-4.train_log.jsonl")}),
    "lr1e-4": (("sin", "lsin", "none"), {
        pe: ("slice16/lr1e-4/order.txt", f"/models/{pe}/pretrain ", f"slice16/lr1e-4/{pe}.train_log.jsonl")
        for pe in ("ape", "rpe")}),
    "text-0.25x": (("sin", "lsin", "none"), {
        pe: ("slice16/text-0.25x/order.txt", f"/models/{pe}/pretrain ", f"slice16/text-0.25x/{pe}.train_log.jsonl")
        for pe in ("ape", "rpe")}),
    "text-7.8x": (("sin", "lsin", "none"), {
        pe: ("slice2/order.txt", f"pl2-{pe}/", f"slice2/{pe}-extra.train_log.jsonl") for pe in ("ape", "rpe")}),
    "warmup-1500": (("lsin", "none"), {
        pe: ("slice15/order.txt", f"/models/{pe}/pretrain ", f"slice15/{pe}.train_log.jsonl") for pe in ("ape", "rpe")}),
}


def final_scale(path):
    for line in open(path):
        step, value = line.split()
        if step == "final":
            return None if value == "-" else float(value)
    return None


def run(setting, pe):
    """(cost, held-out loss, its step, final scale) of this slice's run, or None if not read out."""
    d = os.path.join(HERE, setting)
    order, piece = os.path.join(d, "order.txt"), f"/models/{pe}/pretrain "
    if not os.path.exists(order) or piece not in open(order).read():
        return None
    loss, step = held_out(os.path.join(d, pe + ".train_log.jsonl"))
    largest = max(by_step(os.path.join(d, pe)), key=lambda sc: sc[1])
    return cost(order, piece), loss, step, final_scale(os.path.join(d, pe + ".scale_by_step.txt")), largest


def main():
    global HERE
    if len(sys.argv) > 1:
        HERE = os.path.abspath(sys.argv[1])
    h1, h2, exact, pending = [], [], [], []
    for setting, (pes, refs) in SETTINGS.items():
        ref = {pe: (cost(os.path.join(NOTEBOOK, o), p), held_out(t)[0]) for pe, (o, p, t) in refs.items()}
        print(f"{setting}: ape {ref['ape'][0]:+.4f} nats (held-out {ref['ape'][1]:.4f}), "
              f"rpe {ref['rpe'][0]:+.4f} (held-out {ref['rpe'][1]:.4f}; half: {ref['rpe'][0] / 2:.4f})")
        if setting in NONE_BEFORE:
            who, log = NONE_BEFORE[setting]
            print(f"  none before ({who}): held-out {held_out(log)[0]:.4f}")
        for pe in pes:
            r = run(setting, pe)
            if r is None:
                pending.append(f"{setting}/{pe}")
                print(f"  {pe}: pending")
                continue
            c, loss, step, scale, (at, most) = r
            sc = "" if scale is None else f", learned scale {scale:.4f}"
            print(f"  {pe}: word-order cost {c:+.4f} nats (largest at a kept step {most:+.4f}, step {at}), "
                  f"held-out {loss:.4f} at step {step}{sc}")
            if pe == "none":
                exact.append(abs(c) < EXACT)
                h2.append((setting, loss - ref["ape"][1]))
                print(f"  none - ape held-out: {loss - ref['ape'][1]:+.4f}")
            else:
                h1.append((f"{setting}/{pe}", c))
    if pending:
        print(f"pending: {' '.join(pending)}: H21.1 and H21.2 are judged when all 14 runs are in")
        return
    if not all(exact):
        print("check (none's cost is 0 within %.3f in every setting): FAILS: a model without a PE has a position "
              "path; nothing is judged" % EXACT)
        return
    print("check (none's cost is 0 within %.3f in every setting): holds" % EXACT)
    worst = max(h1, key=lambda x: x[1])
    print("H21.1 (sin and lsin unread, below %.2f, in all 9 runs): %s (largest %s %+.4f)"
          % (UNREAD, "held" if worst[1] < UNREAD else "did not hold", worst[0], worst[1]))
    most = max(h2, key=lambda x: x[1])
    print("H21.2 (none - ape held-out at most %+.2f in all 5 settings): %s (largest %s %+.4f)"
          % (SAME, "held" if most[1] <= SAME else "did not hold", most[0], most[1]))


if __name__ == "__main__":
    main()
