#!/usr/bin/env python3
"""The modern2 slice's hypotheses (README.md: HN1-HN6) judged from its lines
(progress.results.jsonl, or the file named; slice 2's per-head.results.jsonl) and the length study's committed
`rope` lines (../results.jsonl). The unit is a trained model (decoder, seed);
effects are log perplexity ratios (2048 / 128) with scripts/claims'
one_sample_ci (Student's t over the models; paired by decoder and seed
against `rope`; a `smollm3` model pairs with the `llama` model of its seed,
the same decoder under SmolLM3's keys). Command A's interleaving is told
from SmolLM3's by the windows in its lines' "model" keys. Each judged
hypothesis is printed as fixed in the plan (held / did not hold) and as the
paper's claim under the verdict table's rule; until it has all its models
it prints "interim, not judged". Run from anywhere:
    python3 results/length/modern2/verdicts.py [LINES]"""
import math
import os
import statistics
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))  # results/: lab.py
import lab  # noqa: E402
from lab import C, below0, lines, minus, reported  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LENGTHS = (128, 256, 512, 1024, 2048)
# The papers' effects in this unit (log perplexity ratio, 2048 / 128, per byte): none found (README).
PAPER = {"HN1": None, "HN3": None}


group = C.decoder_lines  # the lm lines of a PE, Command A's (windows) or not; smollm3 keyed as llama


def show(name, x, need, rule, claim=None):
    """need: the plan's models; claim: (id, sign) of the paper's claim, judged by scripts/claims' verdict."""
    lab.show(name, x, len(x) >= need, rule, claim, PAPER, f"interim, not judged ({len(x)} of {need})")


def log_at(rows, n, scaled=None):
    return {(r["task"], r["seed"]): math.log(r["scaled"][scaled] if scaled else r["metrics"]["perplexity"])
            for r in rows if r["eval_len"] == n and (not scaled or scaled in r.get("scaled", {}))}


def passkeys(label, rows):
    cells = []
    for n in LENGTHS:
        got = [r["metrics"] for r in rows if r["eval_len"] == n]
        if got:
            cells.append(f"{n}: {statistics.mean(g['passkey'] for g in got):.2f}/"
                         f"{statistics.mean(g['passkey_digits'] for g in got):.2f} (n {len(got)})")
    print(f"  {label:22s} " + "  ".join(cells))


def main(argv):
    mine = lines(argv[1] if len(argv) > 1 else os.path.join(HERE, "progress.results.jsonl"))
    base = [r for r in lines(os.path.join(HERE, "..", "results.jsonl")) if r.get("kind") == "lm"]
    rope = C.log_ratios(base, "rope")
    ratio = {"ssmax": C.log_ratios(group(mine, "rope+ssmax"), "rope+ssmax"),
             "lrope": C.log_ratios(group(mine, "lrope"), "lrope"),
             "decoupled": C.log_ratios(group(mine, "decoupled"), "decoupled"),
             "interleave": C.log_ratios(group(mine, "rope:layers=0-2"), "rope:layers=0-2"),
             "command-a": C.log_ratios(group(mine, "rope:layers=0-2", True), "rope:layers=0-2")}
    show("HN1 (rope+ssmax - rope, log ratio, paired)", minus(ratio["ssmax"], rope), 6, below0, ("HN1", -1))
    show("HN2 (rope:layers=0-2 - rope, log ratio, paired; no paper's claim)", minus(ratio["interleave"], rope), 6,
         below0)
    show("HN3 (Command A's layers - rope, log ratio, paired)", minus(ratio["command-a"], rope), 3, below0,
         ("HN3", -1))
    smol = {k: v for k, v in ratio["interleave"].items() if k[0] == "llama"}  # the smollm3 models
    show("HN3 beside (Command A's layers - SmolLM3's, the windows alone)", minus(ratio["command-a"], smol), 3,
         reported)
    for pe in ("lrope", "decoupled"):
        show(f"HN4 ({pe} - rope, log ratio, paired)", minus(ratio[pe], rope), 6, reported)
    at128 = log_at([r for r in base if r["pe"] == "rope"], 128)
    for label, pe, win in (("rope+ssmax", "rope+ssmax", False), ("lrope", "lrope", False),
                           ("decoupled", "decoupled", False), ("rope:layers=0-2", "rope:layers=0-2", False),
                           ("Command A's layers", "rope:layers=0-2", True)):
        show(f"HN4 ({label} - rope at 128, log ppl, paired)", minus(log_at(group(mine, pe, win), 128), at128),
             3 if win else 6, reported)
    plain = group(mine, "rope")
    for n in LENGTHS:
        show(f"HN5 (GPT-2 rope, STRING - plain at {n}, log ppl)", minus(log_at(plain, n, "string"), log_at(plain, n)),
             3, reported)
    show("HN5 (GPT-2 rope, this slice's log ratio - the committed one)", minus(C.log_ratios(plain, "rope"), rope), 3,
         reported)
    ph_path = os.path.join(HERE, "per-head.results.jsonl")  # slice 2 (per-head.json), planned 2026-12-05
    per_head = group(lines(ph_path) if os.path.exists(ph_path) else [], "lrope:per_head=on")
    ratio["per-head"] = C.log_ratios(per_head, "lrope:per_head=on")
    show("HN6 (lrope:per_head=on - lrope, log ratio, paired)", minus(ratio["per-head"], ratio["lrope"]), 6, reported)
    show("HN6 beside (lrope:per_head=on - rope, log ratio, paired)", minus(ratio["per-head"], rope), 6, reported)
    show("HN6 beside (lrope:per_head=on - lrope at 128, log ppl, paired)",
         minus(log_at(per_head, 128), log_at(group(mine, "lrope"), 128)), 6, reported)
    print("\nPasskey (whole keys / digits) by length, mean over models")
    for label, pe, win in (("rope+ssmax", "rope+ssmax", False), ("lrope", "lrope", False),
                           ("decoupled", "decoupled", False), ("rope:layers=0-2", "rope:layers=0-2", False),
                           ("Command A's layers", "rope:layers=0-2", True), ("rope (GPT-2, again)", "rope", False)):
        passkeys(label, group(mine, pe, win))
    passkeys("lrope:per_head=on", per_head)


if __name__ == "__main__":
    main(sys.argv)
