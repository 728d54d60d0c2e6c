#!/usr/bin/env python3
"""Pilot 3 of the RULER notebook (README.md, "Pilot 3"): each task alone
beside the passkey (`kerple`, Llama, seed 1), niah_single's run being
control 6's. Prints each task's answers whole at each length, its answer
tokens at 128 and the passkey at 128, then HP3 (at least 0.5 whole at
128), fixed before the runs. A task whose lines are not in yet is said so."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from lab import lines  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
TASKS = ["niah_single", "niah_multikey", "niah_multivalue", "niah_multiquery", "vt", "cwe", "fwe", "kv"]
BAR = 0.5  # answered whole at 128, fixed before the runs


def task_lines(t):
    name = "control-niah-passkey.results.jsonl" if t == "niah_single" else f"pilot3-{t}.results.jsonl"
    path = os.path.join(HERE, name)
    return {r["eval_len"]: r for r in lines(path)} if os.path.exists(path) else {}


def main():
    passed, failed, missing = [], [], []
    print("| task | whole at 128 | 256 | 512 | 1024 | answer tokens at 128 | passkey at 128 | perplexity at 128 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for t in TASKS:
        by_len = task_lines(t)
        if 128 not in by_len:
            missing.append(t)
            print(f"| `{t}` | not in yet | | | | | | |")
            continue
        r = by_len[128]
        whole = r["ruler"][t]
        (passed if whole >= BAR else failed).append(t)
        cells = [f"{by_len[L]['ruler'][t]:.2f}" if L in by_len else "-" for L in (256, 512, 1024)]
        print(f"| `{t}` | {whole:.2f} | " + " | ".join(cells)
              + f" | {r['ruler_part'][t]:.3f} | {r['metrics']['passkey']:.2f} | {r['metrics']['perplexity']:.3f} |")
    print(f"\nHP3 (at least {BAR} whole at 128): held for {', '.join(passed) or 'none'}; "
          f"failed for {', '.join(failed) or 'none'}"
          + (f"; not in yet: {', '.join(missing)}" if missing else ""))


if __name__ == "__main__":
    main()
