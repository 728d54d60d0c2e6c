#!/usr/bin/env python3
"""The phase diagram of issue 51 against its axes: the word-order cost of
each final model (order_ablation.py's "shuffled" minus "as is", nats per
masked token, the study's 32 windows) against how far one setting moved
from the study's recipe (BERT 4 x 128, 1x the text, peak lr 1e-3, a warm-up
of 300 steps, 3000 steps), on log2 of the factor: one panel per axis. `rpe`
is the reference a PE must reach half of (the criterion, drawn as its own
series); a point of several draws is their mean (the draws: --table).
Points are read from the committed order.txt lines named below, not typed.
Writes phase_axes.csv beside this script (panel, series, x, y: the long
table `posemb plot lines` reads; `make position-learning` draws it);
--table prints every point with its draws and sources instead.
The second measure (slice 21), where `none` was pretrained at each setting
(the text, the learning rate, the warm-up): each PE's held-out MLM loss at
the end minus `none`'s at the same setting (below 0: the PE helps), from
the committed train logs; written to phase_heldout.csv (`none` as the grey
0 line of every panel), --heldout prints it.
Standard library and results/lab.py only; run from anywhere."""
import functools
import json
import math
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "results"))
from lab import write_points  # noqa: E402
STUDY = "../study-data/positions/order_ablation.txt"  # the study's recipe, 3000 steps

# A point's sources: (file under this folder, a piece of its model's line).
RECIPE = {
    "ape": [(STUDY, "RUN/models/ape/pretrain ")],
    "sin": [(STUDY, "RUN/models/sin/pretrain ")],
    "lsin": [(STUDY, "RUN/models/lsin/pretrain ")],
    "rpe": [(STUDY, "RUN/models/rpe/pretrain "), ("slice4/order.txt", "pl5-rpe-s2/")],
}
L2 = math.log2

# (panel, [(series, x, sources)]); x = log2 of the setting over the recipe's.
PANELS = [
    ("the text (x 1.77 M tokens)", [
        ("ape", -2, [("slice16/text-0.25x/order.txt", "/models/ape/pretrain ")]),
        ("ape", 0, RECIPE["ape"]), ("ape", L2(7.8), [("slice2/order.txt", "pl2-ape/")]),
    ] + [(pe, x, src) for pe in ("sin", "lsin") for x, src in (  # slice 21
        (-2, [("slice21/text-0.25x/order.txt", "/models/%s/pretrain " % pe)]), (0, RECIPE[pe]),
        (L2(7.8), [("slice21/text-7.8x/order.txt", "/models/%s/pretrain " % pe)]))] + [
        ("rpe", -2, [("slice16/text-0.25x/order.txt", "/models/rpe/pretrain ")]),
        ("rpe", 0, RECIPE["rpe"]), ("rpe", L2(7.8), [("slice2/order.txt", "pl2-rpe/")]),
    ]),
    ("peak learning rate (x 1e-3)", [
        ("ape", L2(0.1), [("slice16/lr1e-4/order.txt", "/models/ape/pretrain ")]),
        ("ape", L2(0.3), [("slice1/order.txt", "pl1-ape/")]), ("ape", 0, RECIPE["ape"]),
    ] + [(pe, x, src) for pe in ("sin", "lsin") for x, src in (  # slice 21
        (L2(0.1), [("slice21/lr1e-4/order.txt", "/models/%s/pretrain " % pe)]),
        (L2(0.3), [("slice21/lr3e-4/order.txt", "/models/%s/pretrain " % pe)]), (0, RECIPE[pe]))] + [
        ("rpe", L2(0.1), [("slice16/lr1e-4/order.txt", "/models/rpe/pretrain ")]),
        ("rpe", L2(0.3), [("slice1/order.txt", "pl1-rpe/")]), ("rpe", 0, RECIPE["rpe"]),
    ]),
    ("steps (x 3000)", [
        ("ape", 0, RECIPE["ape"]), ("ape", 2, [(STUDY, "exp-ape-long/models/ape/pretrain (step 12000")]),
        ("ape over 7.8x the text", 3, [("slice18/ape-24k/order.txt", "/models/ape/pretrain ")]),  # slice 18
        ("rpe over 7.8x the text", 3, [("slice18/rpe-24k/order.txt", "/models/rpe/pretrain ")]),  # slice 18
        ("ape x1 (no learned scale) over 7.8x the text", 3,  # slice 24: BERT's own APE, 2 draws
         [("slice24/s%d/order.txt" % s, "/models/ape_scale_1/pretrain ") for s in (1, 2)]),
        ("sin", 0, RECIPE["sin"]), ("sin", 2, [("slice18/sin-12k/order.txt", "/models/sin/pretrain ")]),
        ("lsin", 0, RECIPE["lsin"]), ("lsin", 2, [("slice18/sin-12k/order.txt", "/models/lsin/pretrain ")]),
        ("sin x0.05 (fixed)", 0, [("slice6/order.txt", "pl7-sin-0.05/"), ("slice6/order.txt", "pl7-sin-0.05-s2/")]),
        ("sin x0.05 (fixed)", 1, [("slice7/order.txt", "pl8-sin-0.05-6000/"),
                                  ("slice8/order.txt", "pl8-sin-fixed-0.05-6000-seed2/"),
                                  ("slice9/order.txt", "pl-sin-d3/")]),
        ("rpe", 0, RECIPE["rpe"]),
        ("rpe", 1, [("slice7/order.txt", "pl8-rpe-6000/"), ("slice8/order.txt", "pl8-rpe-6000-seed2/")]),
    ]),
    ("width (x 128)", [
        (pe, x, [("slice13/%s/order.txt" % w, "/models/%s/pretrain " % pe)] if w else RECIPE[pe])
        for pe in ("ape", "sin", "lsin", "rpe") for x, w in ((-1, "w64"), (0, None), (1, "w256"))
    ]),
    # The positions' RMS at the start over the study's 0.02 (ape's N(0, 0.02) table at scale 1; the study's
    # learned-scale sinusoid starts at the amplitude rule's 0.0282843 / sqrt(2) = 0.0200): fixed factors on ape's learnable table
    # (slices 5, 7), learned scales started higher on the sinusoid (slice 14), the fixed sinusoid (slices 5, 6).
    ("amplitude at the start (x RMS 0.02)", [
        ("ape", 0, RECIPE["ape"]),
        ("ape", L2(2.5), [("slice7/order.txt", "pl8-ape-scale2.5/")]),
        ("ape", L2(8), [("slice5/order.txt", "pl6-ape-scale8/")]),
        ("sin", L2(0.0282843 / 2 ** 0.5 / 0.02), RECIPE["sin"]),
        ("sin", L2(0.05 / 2 ** 0.5 / 0.02),
         [("slice14/order.txt", "/sin_scale_0_05_learned_scale_on/pretrain ")]),
        ("sin", L2(0.0883883 / 2 ** 0.5 / 0.02),
         [("slice14/order.txt", "/sin_scale_0_0883883_learned_scale_on/pretrain ")]),
        ("sin (fixed)", L2(0.05 / 2 ** 0.5 / 0.02), [("slice6/order.txt", "pl7-sin-0.05/"),
                                                    ("slice6/order.txt", "pl7-sin-0.05-s2/")]),
        ("sin (fixed)", L2(1 / 2 ** 0.5 / 0.02), [("slice5/order.txt", "pl6-sin-fixed/")]),
        ("rpe", 0, RECIPE["rpe"]),
    ]),
    ("warm-up (x 300 steps)", [
        ("ape", 0, RECIPE["ape"]), ("ape", L2(5), [("slice15/order.txt", "/models/ape/pretrain ")]),
        ("sin", 0, RECIPE["sin"]), ("sin", L2(5), [("slice15/order.txt", "/models/sin/pretrain ")]),
        ("lsin", 0, RECIPE["lsin"]), ("lsin", L2(5), [("slice21/warmup-1500/order.txt", "/models/lsin/pretrain ")]),
        ("rpe", 0, RECIPE["rpe"]), ("rpe", L2(5), [("slice15/order.txt", "/models/rpe/pretrain ")]),
    ]),
]
LINE = re.compile(r"as is: (-?[0-9.]+) shuffled: (-?[0-9.]+)")

# The second measure's runs: (panel, [(x, {pe: its train log under this folder})]); one draw each.
HELD_PES = ("ape", "sin", "lsin", "rpe")
RECIPE_LOGS = {pe: "../study-data/pretrain/%s.train_log.jsonl" % pe for pe in HELD_PES + ("none",)}
S21 = {s: {pe: "slice21/%s/%s.train_log.jsonl" % (s, pe) for pe in ("sin", "lsin", "none")}
       for s in ("text-0.25x", "text-7.8x", "lr1e-4", "lr3e-4")}
S21["warmup-1500"] = {pe: "slice21/warmup-1500/%s.train_log.jsonl" % pe for pe in ("lsin", "none")}
HELD = [
    ("the text (x 1.77 M tokens)", [
        (-2, dict(S21["text-0.25x"], **{pe: "slice16/text-0.25x/%s.train_log.jsonl" % pe for pe in ("ape", "rpe")})),
        (0, RECIPE_LOGS),
        (L2(7.8), dict(S21["text-7.8x"], **{pe: "slice2/%s-extra.train_log.jsonl" % pe for pe in ("ape", "rpe")})),
    ]),
    ("peak learning rate (x 1e-3)", [
        (L2(0.1), dict(S21["lr1e-4"], **{pe: "slice16/lr1e-4/%s.train_log.jsonl" % pe for pe in ("ape", "rpe")})),
        (L2(0.3), dict(S21["lr3e-4"], **{pe: "slice1/%s-lr3e-4.train_log.jsonl" % pe for pe in ("ape", "rpe")})),
        (0, RECIPE_LOGS),
    ]),
    ("warm-up (x 300 steps)", [
        (0, RECIPE_LOGS),
        (L2(5), dict(S21["warmup-1500"], **{pe: "slice15/%s.train_log.jsonl" % pe for pe in ("ape", "sin", "rpe")})),
    ]),
]


def cost(path, piece):
    """shuffled - as is on the one line of path holding piece."""
    hits = [l for l in open(os.path.join(HERE, path)) if piece in l and LINE.search(l)]
    if len(hits) != 1:
        sys.exit("axes.py: %s: %d lines hold %r, not 1" % (path, len(hits), piece))
    a, s = LINE.search(hits[0]).groups()
    return float(s) - float(a)


@functools.lru_cache(maxsize=None)  # the recipe's logs and each setting's none serve several points
def held_out(path):
    """(loss, step) of the last eval line of a train log: the held-out loss at the end; path under this folder or absolute."""
    evals = [r for r in map(json.loads, open(os.path.join(HERE, path))) if r.get("kind") == "eval"]
    if not evals:
        sys.exit("axes.py: %s: no eval line" % path)
    return evals[-1]["loss"], evals[-1]["step"]


def held_points():
    """(panel, pe, x, held-out loss - none's, its source) for every run of HELD."""
    for panel, xs in HELD:
        for x, logs in xs:
            none = held_out(logs["none"])[0]
            for pe in HELD_PES:
                if pe in logs:
                    yield panel, pe, x, held_out(logs[pe])[0] - none, logs[pe]


def write_long(name, rows):
    """rows of (panel, series, x, y) to NAME beside this script (lab's writer; x and y to 4 decimals, LF as committed)."""
    write_points(os.path.join(HERE, name), [(p, s, "%.4f" % x, "%.4f" % y) for p, s, x, y in rows], lineterminator="\n")


def points():
    for panel, rows in PANELS:
        for series, x, sources in rows:
            draws = [cost(f, p) for f, p in sources]
            yield panel, series, x, sum(draws) / len(draws), draws, sources


def main():
    if sys.argv[1:] == ["--heldout"]:
        for panel, pe, x, y, src in held_points():
            print("%-28s %-5s x %+.3f held-out - none's %+.4f  %s" % (panel, pe, x, y, src))
        return
    rows = list(points())
    if sys.argv[1:] == ["--table"]:
        for panel, series, x, y, draws, sources in rows:
            print("%-28s %-18s x %+.3f cost %+.4f draws %s  %s" % (panel, series, x, y,
                  " ".join("%+.4f" % d for d in draws), "; ".join("%s: %s" % s for s in sources)))
        return
    write_long("phase_axes.csv", long_rows([p for p, _ in PANELS], rows, "half of rpe's (the criterion)", 0.5))
    held = list(held_points())
    zero = [("", "none (the reference)", x, 0.0) for x in sorted({r[2] for r in held})]  # grey in every panel
    write_long("phase_heldout.csv", list(long_rows([p for p, _ in HELD], held)) + zero)


def long_rows(panels, rows, ref_name=None, ref_factor=None):
    """Each panel's series in order of appearance, each by x; with ref_name, then rpe's points times ref_factor."""
    for panel in panels:
        mine = [r for r in rows if r[0] == panel]
        for name in dict.fromkeys(r[1] for r in mine):
            for r in sorted((r for r in mine if r[1] == name), key=lambda r: r[2]):
                yield panel, name, r[2], r[3]
        if ref_name:
            for r in sorted((r for r in mine if r[1] == "rpe"), key=lambda r: r[2]):
                yield panel, ref_name, r[2], r[3] * ref_factor


if __name__ == "__main__":
    main()
