#!/usr/bin/env python3
"""The sinks notebook's figure (issue 56, part 4): the largest head's
first-token attention at each checkpoint (the runs' `sink_curve`: [step, mean
over heads, largest head, share past 0.3]), mean over the 3 seeds, per PE; one
panel per arm: slice 1 (both decoders, 2000 steps), slice 2's long arm (Llama,
8000 steps) and its wide arm (Llama, width 256, 2000 steps), slice 3 (Llama
NoPE, 32,000 steps). "sink (0.3)" is Gu
et al.'s threshold. Writes curve.csv beside this script (panel, series, x, y),
then
    posemb plot lines results/length/sinks/curve.csv --markers --cols 2 --free-x \\
        --xlabel "training step" --ylabel "largest head's first-token attention" \\
        --out docs/images/sink_curve.png
(make long-context). Standard library only; run from anywhere."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))  # results/: lab.py
from lab import lines, write_points  # noqa: E402

THRESHOLD = 0.3  # Gu et al.'s sink: a head with at least this much attention on the first token
ARMS = [("sinks.results.jsonl", {"gpt2": "GPT-2, 2000 steps (slice 1)", "llama": "Llama, 2000 steps (slice 1)"}),
        ("slice2-long.results.jsonl", {"llama": "Llama, 8000 steps (slice 2)"}),
        ("slice2-wide.results.jsonl", {"llama": "Llama, width 256 (slice 2)"}),
        ("slice3-longer.results.jsonl", {"llama": "Llama, 32,000 steps (slice 3)"})]


def curves(path):
    """{(decoder, pe): {step: [the largest head's mass, one per seed]}} of a results file."""
    out = {}
    for r in lines(os.path.join(HERE, path)):
        for step, _, largest, _ in r.get("sink_curve", []):
            out.setdefault((r["task"], r["pe"]), {}).setdefault(int(step), []).append(largest)
    return out


def main():
    rows = []
    for path, panels in ARMS:
        got = curves(path)
        for decoder, panel in panels.items():
            steps = set()
            for (d, pe), by_step in sorted(got.items()):
                if d != decoder:
                    continue
                for step, xs in sorted(by_step.items()):
                    if len(xs) != 3:
                        sys.exit(f"curve.py: {path}: {decoder} {pe} step {step}: {len(xs)} seeds, not 3")
                    rows.append((panel, pe, step, f"{sum(xs) / 3:.4f}"))
                    steps.add(step)
            rows += [(panel, f"sink ({THRESHOLD})", s, THRESHOLD) for s in (min(steps), max(steps))]
    write_points(os.path.join(HERE, "curve.csv"), rows)


if __name__ == "__main__":
    main()
