#!/usr/bin/env python3
"""HF1's test: perplexity at 128 tokens of the four rotary PEs of this folder
(its lines: results.jsonl) and of
NoPE (the length study's committed Llama lines), 3 seeds each; Welch 95%
intervals of each difference (scripts/claims' welch_ci) and the verdict of
each hypothesis as the README fixed it. Run from the repository's root:
    python3 results/length/frequencies/ordering.py [LINES]"""
import importlib.machinery
import importlib.util
import json
import os
import statistics
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..")
HERE = os.path.dirname(os.path.abspath(__file__))


def claims():
    loader = importlib.machinery.SourceFileLoader("claims", os.path.join(ROOT, "scripts", "claims"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("claims", loader))
    loader.exec_module(module)
    return module


def ppl(path, length=128, task="llama"):
    """{pe: {seed: perplexity at length}}"""
    out = {}
    with open(path) as f:
        for line in f:
            r = json.loads(line)
            if r["task"] == task and r["eval_len"] == length:
                out.setdefault(r["pe"], {})[r["seed"]] = r["metrics"]["perplexity"]
    return out


def main():
    lines = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "results.jsonl")
    C = claims()
    p = ppl(lines)
    p["none"] = ppl(os.path.join(ROOT, "results", "length", "results.jsonl"))["none"]
    for pe in ("rope:p=0.75", "rope", "rope:base=500000", "rope:p=0.25", "none"):
        v = [p[pe][s] for s in sorted(p.get(pe, {}))]
        print(f"{pe:18s} seeds {len(v)}  mean {statistics.mean(v):.4f}  " + " ".join(f"{x:.4f}" for x in v))
    tests = (("HF1a", "rope:p=0.75", "rope", "not worse"), ("HF1b", "rope:base=500000", "rope", "not worse"),
             ("HF1c", "rope:p=0.25", "rope", "worse"), ("HF1d", "none", "rope:p=0.25", "worse"))
    for name, a, b, kind in tests:
        xa, xb = list(p[a].values()), list(p[b].values())
        if len(xa) < 2 or len(xb) < 2:
            print(f"{name}: {a} - {b}: fewer than 2 seeds, not judged")
            continue
        eff, lo, hi, pv, mde = C.welch_ci(xa, xb)
        held = (eff <= 0 or lo <= 0 <= hi) if kind == "not worse" else lo > 0
        print(f"{name}: {a} - {b} = {eff:+.4f} [{lo:+.4f}, {hi:+.4f}] (p {pv:.3g}, detects {mde:.3g}; "
              f"{len(xa)} and {len(xb)} seeds): {a} {kind} than {b}: {'held' if held else 'did not hold'}")


if __name__ == "__main__":
    main()
