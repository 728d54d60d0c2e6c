#!/usr/bin/env python3
"""The modern slice's figure (docs/images/length_modern.png): perplexity against context length, mean over the
3 seeds, one panel per decoder, for stick-breaking, PoPE and PaTH (progress.results.jsonl) beside ALiBi's
committed lines (../results.jsonl). RoPE's (4.7 at 128, 28 at 2048) is left out: on these axes it
would flatten the others. Writes the points' CSV to standard output:
    python3 results/length/modern/figure.py > points.csv
    posemb plot lines points.csv --markers --out docs/images/length_modern.png \
        --xlabel "log2(context / 128); trained at 128" --ylabel "perplexity (bytes), mean of 3 seeds" \
        --title "Stick-breaking, PoPE and PaTH past the training length, beside ALiBi\""""
import collections
import json
import math
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))


def lines(path):
    with open(path) as f:
        return [json.loads(x) for x in f if x.strip()]


def main():
    ppl = collections.defaultdict(list)
    rows = lines(os.path.join(HERE, "progress.results.jsonl"))
    rows += [r for r in lines(os.path.join(HERE, "..", "results.jsonl")) if r["pe"] == "alibi"]
    for r in rows:
        if r.get("kind") == "lm":
            ppl[(r["task"], r["pe"], r["eval_len"])].append(r["metrics"]["perplexity"])
    print("panel,series,x,y")
    for task, name in (("gpt2", "GPT-2"), ("llama", "Llama")):
        for pe in ("stickbreaking", "pope", "path", "alibi"):
            for n in (128, 256, 512, 1024, 2048):
                v = ppl[(task, pe, n)]
                assert len(v) == 3, (task, pe, n, len(v))
                print(f"{name},{pe},{math.log2(n / 128):g},{statistics.mean(v):.4f}")


if __name__ == "__main__":
    main()
