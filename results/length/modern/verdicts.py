#!/usr/bin/env python3
"""The modern slice's hypotheses (README.md: HM1-HM4) judged from its lines
(progress.results.jsonl, or the file named) and the length study's committed
`rope` lines (../results.jsonl). The unit is a trained model (decoder, seed);
effects are log perplexity ratios with scripts/claims' one_sample_ci
(Student's t over the models; paired by decoder and seed against `rope`).
Each hypothesis is printed twice: as fixed in the plan (held / did not hold)
and as the paper's claim under the verdict table's rule (scripts/claims'
verdict: reproduced, reproduced confounded, not reproduced, untestable here),
with the paper's effect where it is in this unit. Until every PE has its 6
models (2 decoders x 3 seeds) both print "interim, not judged". Run from
anywhere:
    python3 results/length/modern/verdicts.py [LINES]"""
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # results/: lab.py
import lab  # noqa: E402
from lab import C, below0, lines, minus, reported  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LENGTHS = (128, 256, 512, 1024, 2048)
MODELS = 6  # the plan's models per PE: 2 decoders x 3 seeds
JUDGED = False
# The papers' effects in this unit (log perplexity ratio, 2048 / 128, per byte); None where no paper gives one.
PAPER = {"HM1": None, "HM2": None, "HM3": None}


def show(name, x, rule, claim=None):
    """claim: (id, sign) of the paper's claim the hypothesis tests, judged by scripts/claims' verdict."""
    lab.show(name, x, JUDGED, rule, claim, PAPER)


def at128(rows, pe):
    return {(r["task"], r["seed"]): math.log(r["metrics"]["perplexity"]) for r in rows
            if r.get("kind") == "lm" and r["pe"] == pe and r["eval_len"] == 128}


def main(argv):
    mine = lines(argv[1] if len(argv) > 1 else os.path.join(HERE, "progress.results.jsonl"))
    base = lines(os.path.join(HERE, "..", "results.jsonl"))
    rope = C.log_ratios(base, "rope")
    global JUDGED
    n = {pe: len(C.log_ratios(mine, pe)) for pe in ("stickbreaking", "pope", "path")}
    JUDGED = min(n.values()) >= MODELS
    if not JUDGED:
        print(f"interim: models per PE {n}; nothing is judged until each has {MODELS} (the plan)")
    show("HM1 (stickbreaking: log ppl 2048 / 128 below 0)", C.log_ratios(mine, "stickbreaking"), below0, ("HM1", -1))
    show("HM2 (pope - rope, log ratio, paired)", minus(C.log_ratios(mine, "pope"), rope), below0, ("HM2", -1))
    show("HM3 (path - rope, log ratio, paired)", minus(C.log_ratios(mine, "path"), rope), below0, ("HM3", -1))
    for pe in ("stickbreaking", "pope", "path"):
        show(f"HM4 ({pe} - rope at 128, log ppl, paired)", minus(at128(mine, pe), at128(base, "rope")), reported)
    print("\nPasskey (whole keys / digits) by length, mean over models")
    for pe in ("stickbreaking", "pope", "path"):
        cells = []
        for n in LENGTHS:
            got = [r["metrics"] for r in mine if r["pe"] == pe and r["eval_len"] == n]
            if got:
                cells.append(f"{n}: {statistics.mean(g['passkey'] for g in got):.2f}/"
                             f"{statistics.mean(g['passkey_digits'] for g in got):.2f} (n {len(got)})")
        print(f"  {pe:14s} " + "  ".join(cells))


if __name__ == "__main__":
    main(sys.argv)
