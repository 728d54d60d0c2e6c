#!/usr/bin/env python3
"""HS1-HS3 from the evaluation lines in this folder: ppl-{plain,string}-sS.jsonl
(posemb perplexity --json) and passkey-{plain,string}-sS.jsonl (posemb passkey
--json) for seeds 1-3; paired t intervals over seeds (scripts/claims'
one_sample_ci). Run from the repository's root."""
import importlib.machinery
import importlib.util
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..", "..")
SEEDS = (1, 2, 3)


def claims():
    loader = importlib.machinery.SourceFileLoader("claims", os.path.join(ROOT, "scripts", "claims"))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("claims", loader))
    loader.exec_module(module)
    return module


def lines(kind, variant, seed):
    with open(os.path.join(HERE, f"{kind}-{variant}-s{seed}.jsonl")) as f:
        return {r["length"]: r for r in map(json.loads, f)}


def main():
    C = claims()
    ppl = {(v, s): lines("ppl", v, s) for v in ("plain", "string") for s in SEEDS}
    key = {(v, s): lines("passkey", v, s) for v in ("plain", "string") for s in SEEDS}
    print("length | plain perplexity by seed | STRING | log(STRING / plain) by seed | mean [95% CI]")
    for L in (128, 256, 512, 1024, 2048):
        p = [ppl[("plain", s)][L]["perplexity"] for s in SEEDS]
        q = [ppl[("string", s)][L]["perplexity"] for s in SEEDS]
        d = [math.log(b / a) for a, b in zip(p, q)]
        eff, lo, hi, pv, mde = C.one_sample_ci(d)
        print(f"{L} | {' '.join(f'{x:.3f}' for x in p)} | {' '.join(f'{x:.3f}' for x in q)} | "
              f"{' '.join(f'{x:+.4f}' for x in d)} | {eff:+.4f} [{lo:+.4f}, {hi:+.4f}] (detects {mde:.3g})")
    print("length | keys whole, plain by seed | STRING | difference, mean [95% CI]")
    for L in (128, 256, 512):
        p = [key[("plain", s)][L]["passkey"] for s in SEEDS]
        q = [key[("string", s)][L]["passkey"] for s in SEEDS]
        d = [b - a for a, b in zip(p, q)]
        if len(set(d)) == 1:
            print(f"{L} | {p} | {q} | every seed {d[0]:+.2f}")
            continue
        eff, lo, hi, pv, mde = C.one_sample_ci(d)
        print(f"{L} | {p} | {q} | {eff:+.3f} [{lo:+.3f}, {hi:+.3f}] (detects {mde:.3g})")


if __name__ == "__main__":
    main()
