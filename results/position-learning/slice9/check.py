"""Slice 9's check: draw 2 of the sinusoid at 0.05 pretrained again on draw 3's
machine, kernels and program (Zen, 7b11dde), against slice 8's run of it
(Cooperlake, d923b2e). Rule fixed before it ran (README, 19:27 UTC): new
word-order cost within 0.2 nats of 3.462 -> draw 3's gap is its draw; 0.4 or
more away -> the machine alone moves it that far; between, undecided.
Prints every number the README's "Check: what held" states."""
import json, os, re

HERE = os.path.dirname(os.path.abspath(__file__))
S8 = os.path.join(HERE, "..", "slice8")

def ablation(path):
    """(as is, shuffled, reversed) of order_ablation.py's line for the final model"""
    for line in open(path):
        m = re.search(r"sin_scale_0_05/pretrain as is: ([\d.]+) shuffled: ([\d.]+) reversed: ([\d.]+)", line)
        if m:
            return tuple(float(x) for x in m.groups())
    raise SystemExit(f"{path}: no order_ablation line for the sinusoid")

def by_step(path):
    return {json.loads(l)["model"].rsplit("/", 1)[-1]: json.loads(l)["order_cost"] for l in open(path)}

def evals(path):
    return {r["step"]: r["loss"] for r in map(json.loads, open(path)) if r["kind"] == "eval"}

def train(path):
    return [r["loss"] for r in map(json.loads, open(path)) if r["kind"] == "train"]

old = ablation(os.path.join(S8, "order.txt"))
new = ablation(os.path.join(HERE, "check-seed2-zen.order.txt"))
d3 = ablation(os.path.join(HERE, "order.txt"))
c_old, c_new, c_d3 = old[1] - old[0], new[1] - new[0], d3[1] - d3[0]
print(f"cost by order_ablation: slice 8 {c_old:+.3f}, check {c_new:+.3f}, draw 3 {c_d3:+.3f}")
gap = c_new - c_old
verdict = "draw" if abs(gap) < 0.2 else ("machine" if abs(gap) >= 0.4 else "undecided")
print(f"check minus slice 8: {gap:+.3f} -> {verdict}; draw 3 minus check: {c_d3 - c_new:+.3f}")
print(f"reversing costs: slice 8 {old[2] - old[0]:.3f}, check {new[2] - new[0]:.3f}")

a = by_step(os.path.join(S8, "sin-fixed-0.05-6000-seed2.order_by_step.jsonl"))
b = by_step(os.path.join(HERE, "check-seed2-zen.order_by_step.jsonl"))
diffs = {k: b[k] - a[k] for k in a}
k_max = max(diffs, key=lambda k: abs(diffs[k]))
print(f"probe order at 6000: slice 8 {a['checkpoint-6000']:.3f}, check {b['checkpoint-6000']:.3f}; "
      f"largest |difference| over {len(diffs)} checkpoints {diffs[k_max]:+.3f} at {k_max}")

ea = evals(os.path.join(S8, "sin-fixed-0.05-6000-seed2.train_log.jsonl"))
eb = evals(os.path.join(HERE, "check-seed2-zen.train_log.jsonl"))
print(f"held-out MLM loss at 6000: slice 8 {ea[6000]:.3f}, check {eb[6000]:.3f}")
ta = train(os.path.join(S8, "sin-fixed-0.05-6000-seed2.train_log.jsonl"))
tb = train(os.path.join(HERE, "check-seed2-zen.train_log.jsonl"))
first = next(i for i, (x, y) in enumerate(zip(ta, tb)) if abs(x - y) > 1e-4 * abs(x))
print(f"training losses first differ by more than 1e-4 (relative) at step {first + 1} "
      f"({ta[first]:.6f} against {tb[first]:.6f})")
