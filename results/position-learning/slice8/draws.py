"""Slice 8's numbers from the committed lines: each draw's held-out MLM loss
(the last evaluation of its train_log) and word-order cost (order_ablation.py's
shuffled - as is on the final model, as slice 7 read it, and `posemb probe
order`'s; order.txt of slices 7 and 8), the criterion per
draw and on the means (H8.1, H8.2), the Welch interval of mean(sin) -
mean(rpe)/2, and the smallest difference n pretrainings per PE detect
(Student's t with equal variances, central quantiles: an approximation).

    python3 results/position-learning/slice8/draws.py

Welch's t quantiles come from the t density integrated numerically (numpy
only: scipy is not on the machines here)."""
import json
import math
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PL = os.path.dirname(HERE)


def eval_loss(path):
    last = None
    for line in open(path):
        j = json.loads(line)
        if j.get("kind") == "eval":
            last = j
    return last["loss"], last["step"]


def ablation_cost(order_txt, model_part):
    """shuffled - as is of order_ablation.py's line for the final model (the read-out slice 7 used)."""
    for line in open(order_txt):
        if model_part in line and " as is: " in line and "checkpoint" not in line:
            w = line.split()
            return float(w[w.index("shuffled:") + 1]) - float(w[w.index("is:") + 1])
    raise SystemExit(f"{order_txt}: no order_ablation line for {model_part}")


def probe_cost(order_txt, model_part):
    """order_cost of the `posemb probe order` line whose model path holds model_part (the final model)."""
    for line in open(order_txt):
        if line.startswith("{"):
            j = json.loads(line)
            if model_part in j["model"] and "checkpoint" not in j["model"]:
                return j["order_cost"]
    raise SystemExit(f"{order_txt}: no line for {model_part}")


def t_cdf(t, df):
    x = np.linspace(0.0, abs(t), 200001)
    pdf = math.gamma((df + 1) / 2) / (math.sqrt(df * math.pi) * math.gamma(df / 2)) * (1 + x * x / df) ** (-(df + 1) / 2)
    half = np.trapz(pdf, x)
    return 0.5 + math.copysign(half, t)


def t_quantile(p, df):
    lo, hi = 0.0, 1000.0
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if t_cdf(mid, df) < p else (lo, mid)
    return (lo + hi) / 2


DRAWS = {  # name: (train_log, order.txt, a part of the final model's path)
    ("sin", 1): (f"{PL}/slice7/sin-fixed-0.05-6000.train_log.jsonl", f"{PL}/slice7/order.txt", "pl8-sin-0.05-6000/"),
    ("sin", 2): (f"{HERE}/sin-fixed-0.05-6000-seed2.train_log.jsonl", f"{HERE}/order.txt", "pl8-sin-fixed-0.05-6000-seed2/"),
    ("rpe", 1): (f"{PL}/slice7/rpe-6000.train_log.jsonl", f"{PL}/slice7/order.txt", "pl8-rpe-6000/"),
    ("rpe", 2): (f"{HERE}/rpe-6000-seed2.train_log.jsonl", f"{HERE}/order.txt", "pl8-rpe-6000-seed2/"),
}

v = {}
for (pe, seed), (log, order, part) in DRAWS.items():
    loss, step = eval_loss(log)
    cost, probe = ablation_cost(order, part), probe_cost(order, part)
    v[(pe, seed)] = (loss, cost, probe)
    print(f"{pe} draw {seed}: held-out MLM loss {loss:.3f} at step {step}, word-order cost {cost:.3f} "
          f"(order_ablation.py; posemb probe order {probe:.3f})")

p = [v[(pe, 2)][2] for pe in ("sin", "rpe")]
print(f"  by posemb probe order: second draws {p[0] / p[1]:.3f}; means "
      f"{(v[('sin', 1)][2] + v[('sin', 2)][2]) / (v[('rpe', 1)][2] + v[('rpe', 2)][2]):.3f}")
s = [v[("sin", k)][1] for k in (1, 2)]
r = [v[("rpe", k)][1] for k in (1, 2)]
print(f"H8.1: second draws, sin / rpe = {s[1]:.3f} / {r[1]:.3f} = {s[1] / r[1]:.3f} (criterion 0.5)")
ms, mr = np.mean(s), np.mean(r)
print(f"H8.2: means, sin {ms:.3f} / rpe {mr:.3f} = {ms / mr:.3f} (criterion 0.5)")
vs, vr = np.var(s, ddof=1), np.var(r, ddof=1)
se = math.sqrt(vs / 2 + 0.25 * vr / 2)
df = (vs / 2 + 0.25 * vr / 2) ** 2 / ((vs / 2) ** 2 + (0.25 * vr / 2) ** 2) if se > 0 else float("inf")
q = t_quantile(0.975, df)
d = ms - mr / 2
print(f"  mean(sin) - mean(rpe)/2 = {d:+.3f} nats, Welch 95% interval [{d - q * se:+.3f}, {d + q * se:+.3f}] "
      f"(df {df:.2f}, t {q:.2f})")
for metric, i in (("held-out loss", 0), ("word-order cost", 1)):
    sds = {pe: float(np.std([v[(pe, k)][i] for k in (1, 2)], ddof=1)) for pe in ("sin", "rpe")}
    sd = max(sds.values())
    print(f"draw spread of the {metric}: sd sin {sds['sin']:.3f}, rpe {sds['rpe']:.3f}; smallest difference "
          "a two-sided t-test (equal variances) at 0.05 finds with 80% power, n pretrainings per PE, sd "
          f"{sd:.3f}: " + ", ".join(
              f"n={n}: {(t_quantile(0.975, 2 * n - 2) + t_quantile(0.8, 2 * n - 2)) * sd * math.sqrt(2 / n):.3f}"
              for n in (2, 3, 5, 8)))
