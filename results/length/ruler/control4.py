#!/usr/bin/env python3
"""Control 4 of the RULER notebook (README.md, "Control 4"): niah_single
answered whole and its answer tokens at each length for the four arms of
the 2 x 2 (keys drawn per prompt or from 8 fixed ones; written as RULER
writes them or as words), then HC4 and the read-out fixed before the runs.
Reads the arms' committed lines; an arm not in yet is said so and nothing
is judged."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
from lab import lines  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ARMS = [("A", "drawn", "digits", "control-niah-here.results.jsonl"),
        ("B", "8 fixed", "digits", "control-niah-fixed.results.jsonl"),
        ("C", "drawn", "lower case (random letters)", "control-niah-words.results.jsonl"),
        ("D", "8 fixed", "words", "control-niah-fixed-words.results.jsonl")]
LEARNS = 0.8  # answered whole at 128, fixed before the runs


def arm_lines(name):
    path = os.path.join(HERE, name)
    return {r["eval_len"]: r for r in lines(path)} if os.path.exists(path) else {}


def main():
    whole = {}
    print("| arm | keys | written as | perplexity at 128 | whole at 128 | 256 | 512 | 1024 | answer tokens at 128 |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for arm, keys, form, name in ARMS:
        by_len = arm_lines(name)
        if 128 not in by_len:
            print(f"| {arm} | {keys} | {form} | not in yet | | | | | |")
            continue
        r = by_len[128]
        whole[arm] = r["ruler"]["niah_single"]
        cells = [f"{by_len[L]['ruler']['niah_single']:.2f}" if L in by_len else "-" for L in (256, 512, 1024)]
        print(f"| {arm} | {keys} | {form} | {r['metrics']['perplexity']:.3f} | {whole[arm]:.2f} | "
              + " | ".join(cells) + f" | {r['ruler_part']['niah_single']:.3f} |")
    if len(whole) < 4:
        print("\nNot judged: %d of 4 arms in." % len(whole))
        return
    learns = {a for a, w in whole.items() if w >= LEARNS}
    print("\nHC4 (B, C or D learns): %s" % ("held" if learns & {"B", "C", "D"} else "failed"))
    if "A" in learns:
        print("Arm A learns here: the controls' failure was the machine's or program's, not the prompt's.")
    elif learns == {"B", "D"}:
        print("Read-out: the key's novelty blocks niah_single (B and D learn, A and C do not).")
    elif learns == {"C", "D"}:
        print("Read-out: the digits block niah_single (C and D learn, A and B do not).")
    else:
        print("Read-out: arms that learn: %s; no mechanism claimed." % (", ".join(sorted(learns)) or "none"))


if __name__ == "__main__":
    main()
