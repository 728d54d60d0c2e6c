#!/usr/bin/env python3
"""The iRoPE slice's hypotheses (README.md: HT1-HT3) judged from its lines:
results.jsonl (the study's runs, two arms x 3 seeds) and eval-only/ (each
`irope` model read by `posemb perplexity` without and with the temperature).
Effects are log perplexity, paired by seed, with scripts/claims'
one_sample_ci (paired t over the seeds); HT3 is the point criterion fixed
beforehand (the mean over seeds of the per-seed ratio at 128, minus 1, within
+-0.01). A test with fewer than 2 seeds is not judged. Run from anywhere:
    python3 results/length/irope/verdicts.py"""
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # results/: lab.py
from lab import C, lines  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PLAIN = "rope:base=10000,pairing=interleaved,layers=0-2"
TEMP = PLAIN + "+temperature:attn_scale=0.1,floor_scale=32,layers=3"
LENGTHS = (128, 256, 512, 1024, 2048)


def study_runs(path, task):
    """{pe: {seed: {eval_len: line}}} of one task's lm lines."""
    out = {}
    for r in lines(path):
        if r.get("kind") == "lm" and r["task"] == task:
            out.setdefault(r["pe"], {}).setdefault(r["seed"], {})[r["eval_len"]] = r
    return out


def eval_only():
    """{arm: {seed: {length: perplexity}}} from eval-only/irope-sN.{plain,temp}.jsonl."""
    out = {"plain": {}, "temp": {}}
    d = os.path.join(HERE, "eval-only")
    for name in sorted(os.listdir(d)):
        seed, arm = name[len("irope-s"):].split(".")[:2]
        out[arm][int(seed)] = {r["length"]: r["perplexity"] for r in lines(os.path.join(d, name))}
    return out


def paired(a, b):
    """one_sample_ci of a[s] - b[s] over the seeds both have, or None below 2."""
    seeds = sorted(set(a) & set(b))
    return (C.one_sample_ci([a[s] - b[s] for s in seeds]), seeds) if len(seeds) >= 2 else (None, seeds)


def show(name, stats, seeds, rule):
    if stats is None:
        print(f"{name}: not judged ({len(seeds)} seed(s))")
        return
    eff, lo, hi, p, mde = stats
    print(f"{name}: {eff:+.4f} [{lo:+.4f}, {hi:+.4f}] p = {p:.3g}, detects {mde:.3g}, seeds {seeds}: {rule(lo, hi)}")


def below0(lo, hi):
    return "held" if hi < 0 else ("reversed" if lo > 0 else "did not hold (the interval spans 0)")


def log_ppl(runs, pe, length):
    return {s: math.log(v[length]["metrics"]["perplexity"]) for s, v in runs.get(pe, {}).items() if length in v}


def main():
    runs = study_runs(os.path.join(HERE, "results.jsonl"), "llama4")
    show("HT1 (trained with the temperature, 2048: temp - plain)",
         *paired(log_ppl(runs, TEMP, 2048), log_ppl(runs, PLAIN, 2048)), below0)
    ev = eval_only()
    for s, v in sorted(ev["plain"].items()):  # the plain side must repeat the study's own line
        study = runs[PLAIN][s]
        off = max(abs(v[n] / study[n]["metrics"]["perplexity"] - 1) for n in LENGTHS)
        print(f"eval-only plain seed {s}: largest relative difference from the study's line {off:.1e}")
    show("HT2 (added at evaluation only, 2048: temp - plain)",
         *paired({s: math.log(v[2048]) for s, v in ev["temp"].items()},
                 {s: math.log(v[2048]) for s, v in ev["plain"].items()}), below0)
    t128, p128 = log_ppl(runs, TEMP, 128), log_ppl(runs, PLAIN, 128)
    seeds = sorted(set(t128) & set(p128))
    if len(seeds) >= 2:
        r = statistics.mean(math.exp(t128[s] - p128[s]) for s in seeds) - 1
        print(f"HT3 (within 1% at 128): mean ratio - 1 = {r:+.4f} over seeds {seeds}: "
              f"{'held' if abs(r) <= 0.01 else 'did not hold'}")
    print("\nReported, no hypothesis: log(ppl 2048 / ppl 128), one-sample t over seeds")
    base = study_runs(os.path.join(HERE, "..", "results.jsonl"), "llama")
    for label, rr, pe in (("irope", runs, PLAIN), ("irope+temp", runs, TEMP), ("llama rope", base, "rope"),
                          ("llama none", base, "none"), ("llama alibi", base, "alibi")):
        a, b = log_ppl(rr, pe, 2048), log_ppl(rr, pe, 128)
        x = [a[s] - b[s] for s in sorted(set(a) & set(b))]
        if len(x) >= 2:
            eff, lo, hi, _, _ = C.one_sample_ci(x)
            print(f"  {label:12s} {eff:+.4f} [{lo:+.4f}, {hi:+.4f}] (n = {len(x)})")
    print("\nPasskey (whole keys, digits) by length, mean over seeds")
    for label, pe in (("irope", PLAIN), ("irope+temp", TEMP)):
        by = runs.get(pe, {})
        cells = []
        for n in LENGTHS:
            got = [v[n]["metrics"] for v in by.values() if n in v]
            if got:
                cells.append(f"{n}: {statistics.mean(g['passkey'] for g in got):.2f}/"
                             f"{statistics.mean(g['passkey_digits'] for g in got):.2f}")
        print(f"  {label:12s} " + "  ".join(cells))


if __name__ == "__main__":
    main()
