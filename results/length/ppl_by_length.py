#!/usr/bin/env python3
"""Perplexity by evaluation length for the PEs of 2024-2025 (issue 55), beside RoPE, per decoder.

    python3 results/length/ppl_by_length.py [--csv]

Reads the committed lines (results.jsonl for RoPE; modern/, modern2/ and
irope/ for the rest) and prints one markdown row per decoder and PE: the
geometric mean over seeds of the perplexity at 128 .. 2048 bytes, the
training length 128, with the seeds' range at 2048. A row only when every
length has the same seeds. Command A's lines are told from SmolLM3's by the
windows in their "model" keys; the smollm3 task is the Llama decoder under
SmolLM3's keys, llama4 Llama 4's decoder with chunks of 32 (irope/README.md).
"""
import collections
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LENGTHS = (128, 256, 512, 1024, 2048)
IROPE = "rope:base=10000,pairing=interleaved,layers=0-2"
# (file under results/length, task, pe, windows, label), in the table's order
ROWS = [
    ("results.jsonl", "gpt2", "rope", False, "RoPE (the study's)"),
    ("modern2/progress.results.jsonl", "gpt2", "rope+ssmax", False, "SSMax on RoPE"),
    ("modern2/progress.results.jsonl", "gpt2", "lrope", False, "learned frequencies (lrope)"),
    ("modern2/per-head.results.jsonl", "gpt2", "lrope:per_head=on", False, "learned frequencies per head"),
    ("modern2/progress.results.jsonl", "gpt2", "decoupled", False, "decoupled RoPE (DeepSeek)"),
    ("modern2/progress.results.jsonl", "gpt2", "rope:layers=0-2", False, "NoPE layer 3 (SmolLM3's roles)"),
    ("modern/progress.results.jsonl", "gpt2", "stickbreaking", False, "stick-breaking"),
    ("modern/progress.results.jsonl", "gpt2", "pope", False, "PoPE"),
    ("modern/progress.results.jsonl", "gpt2", "path", False, "PaTH"),
    ("results.jsonl", "llama", "rope", False, "RoPE (the study's)"),
    ("modern2/progress.results.jsonl", "llama", "rope+ssmax", False, "SSMax on RoPE"),
    ("modern2/progress.results.jsonl", "llama", "lrope", False, "learned frequencies (lrope)"),
    ("modern2/per-head.results.jsonl", "llama", "lrope:per_head=on", False, "learned frequencies per head"),
    ("modern2/progress.results.jsonl", "llama", "decoupled", False, "decoupled RoPE (DeepSeek)"),
    ("modern2/progress.results.jsonl", "smollm3", "rope:layers=0-2", False, "SmolLM3's layers (smollm3)"),
    ("modern2/progress.results.jsonl", "smollm3", "rope:layers=0-2", True, "Command A's layers (smollm3, window 64)"),
    ("irope/results.jsonl", "llama4", IROPE, False, "iRoPE, chunks of 32 (llama4)"),
    ("irope/results.jsonl", "llama4", IROPE + "+temperature:attn_scale=0.1,floor_scale=32,layers=3", False,
     "iRoPE with Llama 4's temperature (llama4)"),
    ("modern/progress.results.jsonl", "llama", "stickbreaking", False, "stick-breaking"),
    ("modern/progress.results.jsonl", "llama", "pope", False, "PoPE"),
    ("modern/progress.results.jsonl", "llama", "path", False, "PaTH"),
]
DECODER = {"gpt2": "GPT-2", "llama": "Llama", "smollm3": "Llama", "llama4": "Llama"}


def lines(path):
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]


def perplexities(rows, task, pe, windows):
    """{eval_len: {seed: perplexity}} of one decoder and PE."""
    got = collections.defaultdict(dict)
    for r in rows:
        if (r.get("kind") == "lm" and r["task"] == task and r["pe"] == pe
                and ("sliding_window" in str(r.get("model", ""))) == windows):
            got[r["eval_len"]][r["seed"]] = r["metrics"]["perplexity"]
    return got


def main(argv):
    csv = "--csv" in argv
    cache = {}
    out = []
    for path, task, pe, windows, label in ROWS:
        if path not in cache:
            cache[path] = lines(os.path.join(HERE, path))
        ppl = perplexities(cache[path], task, pe, windows)
        seeds = sorted(ppl.get(LENGTHS[0], {}))
        if not seeds or any(sorted(ppl.get(n, {})) != seeds for n in LENGTHS):
            continue
        gmean = [math.exp(sum(math.log(ppl[n][s]) for s in seeds) / len(seeds)) for n in LENGTHS]
        last = [ppl[LENGTHS[-1]][s] for s in seeds]
        out.append((DECODER[task], label, gmean, min(last), max(last), len(seeds)))
    if csv:
        print("decoder,pe," + ",".join(f"ppl_{n}" for n in LENGTHS) + ",min_2048,max_2048,seeds")
        for d, label, g, lo, hi, n in out:
            print(f'{d},"{label}",' + ",".join(f"{v:.4f}" for v in g) + f",{lo:.4f},{hi:.4f},{n}")
        return
    print("| decoder | PE | " + " | ".join(str(n) for n in LENGTHS) + " | 2048, seeds' range | seeds |")
    print("| --- | --- | " + " | ".join("---:" for _ in LENGTHS) + " | ---: | ---: |")
    for d, label, g, lo, hi, n in out:
        print(f"| {d} | {label} | " + " | ".join(f"{v:.2f}" for v in g) + f" | {lo:.2f}-{hi:.2f} | {n} |")


if __name__ == "__main__":
    main(sys.argv)
