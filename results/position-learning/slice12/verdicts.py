"""Slice 12 judged from its read-out (../README.md, "Slice 12"): the 8,000-token
vocabulary trained on the study's corpora, post-LN, 3000 steps, one draw per PE.

Reads order.txt (order_ablation.py's line per final model: as is, shuffled,
reversed), PE.order_by_step.jsonl (`posemb probe order` at every kept
checkpoint) and PE.scale_by_step.txt (the learned scale), all in this folder,
and the held-out MLM loss from vocab-8000.results.jsonl's pretraining logs
(PE.train_log.jsonl). Prints the checks and H12.1-H12.2 as fixed before the run:
  checks: rpe's cost above 1 nat (else nothing is judged); none's within 0.001 of 0
  H12.1: ape's cost >= half of rpe's;  H12.2: the same for sin and for lsin
  below 0.05 nats: unread; between 0.05 and half of rpe's: partly read."""
import json
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
PES = ["none", "ape", "sin", "lsin", "rpe"]


def ablation():
    out = {}
    for line in open(os.path.join(HERE, "order.txt")):
        m = re.search(r"models/(\w+)/pretrain as is: ([\d.]+) shuffled: ([\d.]+) reversed: ([\d.]+)", line)
        if m:
            out[m.group(1)] = tuple(float(x) for x in m.groups()[1:])
    missing = [p for p in PES if p not in out]
    if missing:
        raise SystemExit(f"order.txt: no order_ablation line for {missing[0]}")
    return out


def probe_final(pe):
    rows = [json.loads(l) for l in open(os.path.join(HERE, f"{pe}.order_by_step.jsonl"))]
    return rows[-1]["order_cost"], len(rows)


def held_out(pe):
    ev = [r for r in map(json.loads, open(os.path.join(HERE, f"{pe}.train_log.jsonl"))) if r["kind"] == "eval"]
    return ev[-1]["loss"]


def scales(pe):
    lines = [l.split() for l in open(os.path.join(HERE, f"{pe}.scale_by_step.txt")) if l.strip()]
    return lines[0], lines[-1]


def main():
    ab = ablation()
    cost = {pe: ab[pe][1] - ab[pe][0] for pe in PES}
    half = cost["rpe"] / 2
    for pe in PES:
        probe, n = probe_final(pe)
        first, last = scales(pe)
        print(f"{pe:5s} held-out {held_out(pe):.3f}  cost {cost[pe]:+.4f} (probe {probe:+.4f}, {n} checkpoints)"
              f"  ratio to rpe {cost[pe] / cost['rpe']:.4f}  scale {first[0]}:{first[1]} -> {last[0]}:{last[1]}")
    ok = cost["rpe"] > 1.0
    print(f"check: rpe's cost {cost['rpe']:+.3f} above 1 nat: {'yes' if ok else 'NO: nothing is judged'}")
    print(f"check: none's cost {cost['none']:+.4f} within 0.001 of 0: {'yes' if abs(cost['none']) <= 0.001 else 'NO'}")
    if not ok:
        return
    for h, pe in (("H12.1", "ape"), ("H12.2", "sin"), ("H12.2", "lsin")):
        c = cost[pe]
        state = "unread" if c < 0.05 else ("partly read" if c < half else "reads word order")
        print(f"{h} {pe}: {c:+.4f} against half of rpe's {half:.3f}: {'held' if c >= half else 'did not hold'} ({state})")


if __name__ == "__main__":
    main()
