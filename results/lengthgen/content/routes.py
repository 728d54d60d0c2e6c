#!/usr/bin/env python3
"""The content slice's figure (issue 56, part 5): per arm and PE (one panel
each: reverse, then copy when its 60 runs are in), the
excess of two error classes at 84 tokens over the alphabet, the mean over
the fitted seeds (token accuracy at least 0.9 at 42 tokens, as the
hypotheses read them; no point where no seed fitted; README.md's table has
each seed): the position share minus its chance, and the content-alone
share minus its chance (verdicts.py's columns). x is log2 of the alphabet (1 = 2 symbols,
5.58 = 48). Reads results.jsonl beside this script (the reverse arm) and
copy.progress.results.jsonl (the copy arm, drawn once complete; or the two files named) and
writes routes.csv beside it (panel, series, x, y: the table `posemb plot
lines` reads), then
    posemb plot lines results/lengthgen/content/routes.csv --markers --cols 4 \\
        --xlabel "symbols (log2)" --ylabel "share of wrong tokens minus chance" \\
        --title "Reversing and copying at 84 tokens (2x): which errors each PE makes" \\
        --out docs/images/content_routes.png
(make long-context). Standard library only; run from anywhere."""
import math
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))  # results/: lab.py
sys.path.insert(0, HERE)  # verdicts.py: the tasks' alphabets, the fit rule, the classes' shares
from lab import lines, write_points  # noqa: E402
from verdicts import COPY, FIT, REVERSE, shares  # noqa: E402

PES = ["rope", "rope+random:max=168", "ape", "none"]
AT = 84


def arm(path, name, alphabets, complete):
    """routes.csv's rows of one arm (panel "NAME: PE"), or [] when complete is false and a cell lacks seeds."""
    runs = [r for r in lines(path) if r["task"] in alphabets]
    fitted = {(r["pe"], r["task"], r["seed"]) for r in runs if r["eval_len"] == AT // 2 and
              r["metrics"]["token_accuracy"] >= FIT}
    seeds = {}  # (pe, symbols) -> seeds run
    cells = {}  # (pe, symbols) -> [(position excess, content-alone excess)] per fitted seed
    for r in runs:
        if r["eval_len"] != AT:
            continue
        seeds.setdefault((r["pe"], alphabets[r["task"]]), set()).add(r["seed"])
        if (r["pe"], r["task"], r["seed"]) not in fitted:
            continue
        if not r.get("errors"):
            sys.exit("%s: %s on %s seed %d has no error classes at %d tokens" % (path, r["pe"], r["task"], r["seed"], AT))
        _, pos, _, alone, pos_chance, _, alone_chance = shares(r)
        cells.setdefault((r["pe"], alphabets[r["task"]]), []).append((pos - pos_chance, alone - alone_chance))
    rows = []
    for pe in PES:
        for i, series in enumerate(("position (both counted)", "content alone")):
            for k in sorted(set(alphabets.values())):
                if len(seeds.get((pe, k), ())) != 3:
                    if not complete:
                        return []
                    sys.exit("%s: %s at %d symbols has %d seeds, not 3" % (path, pe, k, len(seeds.get((pe, k), ()))))
                got = cells.get((pe, k), [])
                y = "%.4f" % statistics.mean(g[i] for g in got) if got else ""
                rows.append(("%s: %s" % (name, pe), series, "%.4f" % math.log2(k), y))
    return rows


def main(argv):
    reverse = argv[1] if len(argv) > 1 else os.path.join(HERE, "results.jsonl")
    copy = argv[2] if len(argv) > 2 else os.path.join(HERE, "copy.progress.results.jsonl")
    rows = arm(reverse, "reverse", REVERSE, True) + arm(copy, "copy", COPY, False)
    write_points(os.path.join(HERE, "routes.csv"), rows)


if __name__ == "__main__":
    main(sys.argv)
